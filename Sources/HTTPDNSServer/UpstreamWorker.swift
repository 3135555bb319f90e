import HTTPDNSCore
import HTTPDNSCurl
import HTTPDNSProtocol
import HTTPDNSSystem
import Synchronization

/// Carries out the resolver's upstream exchanges; completions run on the loop thread.
///
/// The worker threads are the daemon's; tests give the resolver a transport they answer by hand.
protocol UpstreamTransport: AnyObject {
    /// Runs one exchange with one upstream within `request.timeoutMs`.
    func send(
        _ request: UpstreamAttemptRequest, completion: @escaping (Result<UpstreamAnswer, UpstreamError>) -> Void)
    /// Runs one Alibaba batch request.
    func send(
        _ request: UpstreamBatchRequest,
        completion: @escaping (Result<[String: UpstreamAnswer], UpstreamError>) -> Void)
    /// Asks a scheduler for its service addresses, within `request.timeoutMs`.
    func send(_ request: ServiceAddressFetch, completion: @escaping (Result<[IPAddress], UpstreamError>) -> Void)
    /// Lets running exchanges finish and drops queued ones, without waiting.
    func shutdown()
    /// A reloaded configuration's settings, for exchanges sent from now on.
    func apply(_ settings: UpstreamSettings)
}

extension UpstreamTransport {
    /// A transport without schedulers (tests that use none): every request fails.
    func send(_ request: ServiceAddressFetch, completion: @escaping (Result<[IPAddress], UpstreamError>) -> Void) {
        completion(.failure(UpstreamError(.transport("this transport asks no scheduler"))))
    }
}

/// What every upstream request shares. The secret is only ever placed in signed URLs.
struct UpstreamSettings: Sendable {
    var secretKey: String?
    var alibabaAPI: AlibabaAPI
    /// The paid Tencent forms' account; its keys go only into encrypted names and token URLs.
    var tencent: TencentAccount
    var caFile: String?
    var tlsName: String?
    var dohPost: Bool

    init(_ resolver: DaemonConfiguration.Resolver) {
        secretKey = resolver.secretKey?.revealed
        alibabaAPI = resolver.alibabaAPI
        tencent = resolver.tencent
        caFile = resolver.caFile
        tlsName = resolver.tlsName
        dohPost = resolver.dohPost
    }
}

/// The daemon's transport: exchanges run on a pool of worker threads, each with its own libcurl
/// handle (connection reuse), and their results are posted back to the loop.
final class WorkerUpstreamTransport: UpstreamTransport {
    private let pool: WorkerPool<UpstreamWorker>
    private var settings: UpstreamSettings
    private let loop: EventLoop

    init(threads: Int, settings: UpstreamSettings, loop: EventLoop) {
        let clock = loop.clock
        let serviceClock = ServiceClockOffset()
        pool = WorkerPool(threads: threads, named: "upstream") {
            UpstreamWorker(clock: clock, serviceClock: serviceClock)
        }
        self.settings = settings
        self.loop = loop
    }

    func send(
        _ request: UpstreamAttemptRequest, completion: @escaping (Result<UpstreamAnswer, UpstreamError>) -> Void
    ) {
        let token = loop.expectCompletion(Result<UpstreamAnswer, UpstreamError>.self, completion)
        let poster = loop.poster
        let settings = self.settings
        pool.submit { worker in poster.post(token: token, value: worker.exchange(request, settings: settings)) }
    }

    func send(
        _ request: UpstreamBatchRequest,
        completion: @escaping (Result<[String: UpstreamAnswer], UpstreamError>) -> Void
    ) {
        let token = loop.expectCompletion(Result<[String: UpstreamAnswer], UpstreamError>.self, completion)
        let poster = loop.poster
        let settings = self.settings
        pool.submit { worker in poster.post(token: token, value: worker.batch(request, settings: settings)) }
    }

    func send(_ request: ServiceAddressFetch, completion: @escaping (Result<[IPAddress], UpstreamError>) -> Void) {
        let token = loop.expectCompletion(Result<[IPAddress], UpstreamError>.self, completion)
        let poster = loop.poster
        let settings = self.settings
        pool.submit { worker in poster.post(token: token, value: worker.schedule(request, settings: settings)) }
    }

    func shutdown() { pool.shutdown() }

    func apply(_ settings: UpstreamSettings) { self.settings = settings }
}

@available(*, unavailable)
extension WorkerUpstreamTransport: Sendable {}

/// Runs upstream exchanges; lives on a worker thread with its own libcurl handle.
final class UpstreamWorker {
    private let http = HTTPClient()
    private let clock: any DaemonClock
    private let serviceClock: ServiceClockOffset

    init(clock: any DaemonClock, serviceClock: ServiceClockOffset) {
        self.clock = clock
        self.serviceClock = serviceClock
    }

    /// One exchange with one upstream, within `request.timeoutMs`.
    func exchange(_ request: UpstreamAttemptRequest, settings: UpstreamSettings) -> Result<
        UpstreamAnswer, UpstreamError
    > {
        let host = request.host
        let family = request.family
        let timeoutMs = request.timeoutMs
        let url = request.endpoint.url ?? ""
        switch request.endpoint.kind {
        case .system:
            return Self.system(host, family: family)
        case .alibaba where settings.alibabaAPI == .v2:
            return alibabaV2(request.endpoint, hosts: [host], family: family, timeoutMs: timeoutMs, settings: settings)
                .map { AlibabaV2.answer(for: host, in: $0) }
        case .alibaba:
            let codec = AlibabaV1(baseURL: url, secret: settings.secretKey)
            let request = codec.resolveRequest(host: host, family: family, now: clock.wallSeconds())
            return fetch(request, timeoutMs: timeoutMs, settings: settings).flatMap {
                AlibabaV1.parseResolve(status: $0.status, body: $0.body, family: family)
            }
        case .tencent:
            if request.endpoint.tencentForm == .free {
                let request = TencentHTTPDNS(baseURL: url).request(host: host, family: family)
                return fetch(request, timeoutMs: timeoutMs, settings: settings).flatMap {
                    TencentHTTPDNS.parse(status: $0.status, body: $0.body, family: family)
                }
            }
            let codec: TencentPaidHTTPDNS
            let http: UpstreamHTTPRequest
            do {
                codec = try Self.tencentPaid(request.endpoint, settings: settings)
                http = try codec.request(hosts: [host], family: family)
            } catch {
                return .failure(error)
            }
            return fetch(http, timeoutMs: timeoutMs, settings: settings).flatMap {
                codec.parse(status: $0.status, body: $0.body, family: family)
            }
        case .dohJSON:
            let codec = DoHJSON(baseURL: url)
            return perType(family, deadlineMs: timeoutMs) { type, remaining in
                self.fetch(codec.request(host: host, type: type), timeoutMs: remaining, settings: settings).flatMap {
                    DoHJSON.parse(status: $0.status, body: $0.body, type: type)
                }
            }
        case .doh:
            let codec = DoHWire(baseURL: url, method: settings.dohPost ? .post : .get)
            return perType(family, deadlineMs: timeoutMs) { type, remaining in
                guard let request = codec.request(host: host, type: type) else {
                    return .failure(UpstreamError(.malformed("cannot encode a DNS query for this name")))
                }
                return self.fetch(request, timeoutMs: remaining, settings: settings).flatMap {
                    DoHWire.parse(status: $0.status, body: $0.body, host: host, type: type)
                }
            }
        }
    }

    /// A batch of at most 5 names, used to prefetch: Alibaba's batch endpoint
    /// (`/resolve?host=a,b`), or a paid Tencent form's `dn=a,b`.
    func batch(_ request: UpstreamBatchRequest, settings: UpstreamSettings) -> Result<
        [String: UpstreamAnswer], UpstreamError
    > {
        if request.endpoint.kind == .tencent {
            let codec: TencentPaidHTTPDNS
            let http: UpstreamHTTPRequest
            do {
                codec = try Self.tencentPaid(request.endpoint, settings: settings)
                http = try codec.request(hosts: request.hosts, family: .both)
            } catch {
                return .failure(error)
            }
            return fetch(http, timeoutMs: request.timeoutMs, settings: settings).flatMap {
                codec.parseBatch(status: $0.status, body: $0.body, family: .both)
            }
        }
        if settings.alibabaAPI == .v2 {
            return alibabaV2(
                request.endpoint, hosts: request.hosts, family: .both, timeoutMs: request.timeoutMs, settings: settings
            )
        }
        let codec = AlibabaV1(baseURL: request.endpoint.url ?? "", secret: settings.secretKey)
        let http = codec.batchRequest(hosts: request.hosts, family: .both, now: clock.wallSeconds())
        return fetch(http, timeoutMs: request.timeoutMs, settings: settings).flatMap {
            AlibabaV1.parseBatch(status: $0.status, body: $0.body, family: .both)
        }
    }

    /// Alibaba's scheduler (`/{account}/ss`), signed with the secret when there is one; the
    /// answer is read up to `AlibabaScheduler.maxBodyBytes` and validated whole.
    func schedule(_ fetch: ServiceAddressFetch, settings: UpstreamSettings) -> Result<[IPAddress], UpstreamError> {
        var generator = SystemRandomNumberGenerator()
        let nonce = String(generator.next() as UInt64, radix: 16)
        let request = AlibabaScheduler.request(
            baseURL: fetch.baseURL, address: fetch.address, region: fetch.region, secret: settings.secretKey,
            now: clock.wallSeconds(), nonce: nonce)
        return self.fetch(
            request, timeoutMs: fetch.timeoutMs, settings: settings, maxBodyBytes: AlibabaScheduler.maxBodyBytes
        ).flatMap { AlibabaScheduler.parse(status: $0.status, body: $0.body) }
    }

    /// One v2 exchange for up to 5 names. An answer refusing the signature as expired corrects
    /// the service's clock offset by its `Date` header and is asked again once, within what is
    /// left of `timeoutMs`.
    private func alibabaV2(
        _ endpoint: UpstreamEndpoint, hosts: [String], family: AddressFamily, timeoutMs: Int,
        settings: UpstreamSettings
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        guard let secret = settings.secretKey,
            let codec = AlibabaV2(baseURL: endpoint.url ?? "", secret: secret, ciphers: LibCryptoCiphers())
        else {
            return .failure(UpstreamError(.transport("the alibaba v2 account's secret or id is not usable")))
        }
        let deadline = clock.nowNanoseconds() + Int64(timeoutMs) * 1_000_000
        var corrected = false
        while true {
            let now = clock.wallSeconds()
            let http: UpstreamHTTPRequest
            do {
                http = try codec.request(
                    hosts: hosts, family: family, expiry: now + serviceClock.seconds + AlibabaV2.signatureLifetime)
            } catch {
                return .failure(error)
            }
            let remainingMs = Int((deadline - clock.nowNanoseconds()) / 1_000_000)
            guard remainingMs >= 1 else { return .failure(UpstreamError(.timeout)) }
            let response: HTTPResponse
            switch fetch(http, timeoutMs: remainingMs, settings: settings) {
            case .failure(let error): return .failure(error)
            case .success(let value): response = value
            }
            let parsed = codec.parseBatch(status: response.status, body: response.body, family: family)
            guard case .failure(let error) = parsed,
                error == UpstreamError(.serviceError(code: AlibabaV2.expiredSignatureCode)),
                !corrected,
                let offset = AlibabaV2.serverClockOffset(
                    dateHeader: response.values(of: "Date").first, now: clock.wallSeconds())
            else {
                return parsed
            }
            serviceClock.seconds = offset
            corrected = true
        }
    }

    /// The codec of a paid `tencent` upstream; its credential is always loaded with the
    /// configuration that gave the upstream its form.
    private static func tencentPaid(_ endpoint: UpstreamEndpoint, settings: UpstreamSettings) throws(UpstreamError)
        -> TencentPaidHTTPDNS
    {
        let account = settings.tencent
        let missing = UpstreamError(.transport("the tencent account's credential is not loaded"))
        let credential: TencentPaidHTTPDNS.Credential
        switch endpoint.tencentForm {
        case .free: throw UpstreamError(.transport("the free tencent form takes no batch"))
        case .des, .aes:
            guard let authID = account.authID, let key = account.key else { throw missing }
            let bytes = Array(key.revealed.utf8)
            credential =
                endpoint.tencentForm == .des ? .des(authID: authID, key: bytes) : .aes(authID: authID, key: bytes)
        case .token:
            guard let token = account.token else { throw missing }
            credential = .token(token.revealed)
        }
        return TencentPaidHTTPDNS(baseURL: endpoint.url ?? "", credential: credential, ciphers: LibCryptoCiphers())
    }

    /// DNS proper asks one record type at a time: A, then AAAA, combined into one answer.
    private func perType(
        _ family: AddressFamily, deadlineMs: Int,
        _ query: (DNSRecordType, Int) -> Result<UpstreamAnswer, UpstreamError>
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let deadline = clock.nowNanoseconds() + Int64(deadlineMs) * 1_000_000
        var answers: [UpstreamAnswer] = []
        for type in DNSRecordType.types(for: family) {
            let remaining = Int((deadline - clock.nowNanoseconds()) / 1_000_000)
            guard remaining >= 1 else { return .failure(UpstreamError(.timeout)) }
            switch query(type, remaining) {
            case .failure(let error): return .failure(error)
            case .success(let answer): answers.append(answer)
            }
        }
        // `types(for: .both)` is A then AAAA: each family keeps its own query's TTL.
        if answers.count == 2 { return .success(.combining(ipv4: answers[0], ipv6: answers[1])) }
        return answers.first.map { .success($0) } ?? .failure(UpstreamError(.malformed("no query was made")))
    }

    private func fetch(
        _ request: UpstreamHTTPRequest, timeoutMs: Int, settings: UpstreamSettings,
        maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes
    ) -> Result<HTTPResponse, UpstreamError> {
        let httpRequest = HTTPRequest(
            url: request.url, method: request.method == .post ? .post : .get,
            headers: request.headers.map { HTTPHeader($0.name, $0.value) }, body: request.body, timeoutMs: timeoutMs,
            caFile: settings.caFile, tlsName: settings.tlsName, maxBodyBytes: maxBodyBytes)
        switch http.perform(httpRequest) {
        case .success(let response): return .success(response)
        case .failure(let error):
            switch error.code {
            case .timeout: return .failure(UpstreamError(.timeout))
            case .bodyTooLarge: return .failure(UpstreamError(.responseTooLarge))
            default: return .failure(UpstreamError(.transport(error.description)))
            }
        }
    }

    /// getaddrinfo has no TTL: answers live for the default the Alibaba and Tencent SDKs give
    /// local DNS answers.
    static func system(_ host: String, family: AddressFamily) -> Result<UpstreamAnswer, UpstreamError> {
        switch SystemResolver.lookup(host, ipv4: family.includes(.ipv4), ipv6: family.includes(.ipv6)) {
        case .success(let addresses):
            return .success(
                UpstreamAnswer(
                    ipv4: addresses.ipv4.compactMap { IPAddress($0) },
                    ipv6: addresses.ipv6.compactMap { IPAddress($0) },
                    ttl: UpstreamAnswer.defaultTTL))
        case .failure(.noSuchHost):
            return .success(UpstreamAnswer(ttl: UpstreamAnswer.defaultTTL, nameExists: false))
        case .failure(.failed(let reason)):
            return .failure(UpstreamError(.transport(reason)))
        }
    }
}

@available(*, unavailable)
extension UpstreamWorker: Sendable {}

/// How far Alibaba's clock is ahead of this machine's, in seconds, as last learnt from a refused
/// signature's `Date`: v2's `exp` is put on the service's clock. Shared by the worker threads.
final class ServiceClockOffset: Sendable {
    private let value = Mutex<Int64>(0)

    var seconds: Int64 {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
