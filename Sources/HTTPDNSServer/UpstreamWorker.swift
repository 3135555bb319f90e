import HTTPDNSCore
import HTTPDNSCurl
import HTTPDNSProtocol
import HTTPDNSSystem
import Synchronization

/// One query to run on a worker thread: the upstreams to try, in order, within one budget.
struct UpstreamQuery: Sendable {
    var host: String
    var family: AddressFamily
    /// (index into the configured list, endpoint), already ordered by health.
    var candidates: [(index: Int, endpoint: UpstreamEndpoint)]
    /// When `Timeout=` from the start runs out: the upstreams' fair shares are cut from this.
    var budgetEndNanoseconds: Int64
    /// When the callers stop waiting (never after the budget's end); the loop moves it later when
    /// a caller with more time joins.
    var deadline: FlightDeadline
    var settings: UpstreamSettings
}

/// The monotonic instant a flight's callers stop waiting, shared between the loop thread (the
/// only writer) and the worker running the flight.
final class FlightDeadline: Sendable {
    private let nanoseconds: Atomic<Int64>

    init(nanoseconds: Int64) { self.nanoseconds = Atomic(nanoseconds) }

    var value: Int64 { nanoseconds.load(ordering: .acquiring) }

    /// Moves the deadline later (never earlier). Called on the loop thread only.
    func extend(to candidate: Int64) {
        if candidate > value { nanoseconds.store(candidate, ordering: .releasing) }
    }
}

/// What every upstream request shares. The secret is only ever placed in signed URLs.
struct UpstreamSettings: Sendable {
    var secretKey: String?
    var caFile: String?
    var tlsName: String?
    var dohPost: Bool
}

extension UpstreamSettings {
    /// The `[Resolver]` settings every upstream query carries.
    init(_ resolver: DaemonConfiguration.Resolver) {
        self.init(
            secretKey: resolver.secretKey?.revealed, caFile: resolver.caFile, tlsName: resolver.tlsName,
            dohPost: resolver.dohPost)
    }
}

/// The outcome of one attempt against one upstream.
struct UpstreamAttempt: Sendable {
    enum Outcome: Sendable {
        case answered(UpstreamAnswer)
        case failed(UpstreamError)
        /// Cut short because every caller stopped waiting, before the upstream's share of
        /// `Timeout=` ran out: no verdict on the upstream's health.
        case abandoned
    }

    var index: Int
    var outcome: Outcome
    var latencyMs: Int
}

/// Runs upstream queries; lives on a worker thread with its own libcurl handle (connection reuse).
final class UpstreamWorker {
    private let http = HTTPClient()

    /// Tries the candidates in order until one answers (an answer may be "no such name"),
    /// never past the callers' deadline. Returns every attempt, for health bookkeeping on the loop.
    ///
    /// Each upstream may use only its fair share of what is left of `Timeout=`, so failover
    /// happens within it; the last one gets whatever is left. When the callers' deadline comes
    /// first, the attempt is cut there and counted as abandoned, not as the upstream's failure;
    /// if a caller with more time joined meanwhile, the same upstream is asked again.
    func run(_ query: UpstreamQuery) -> [UpstreamAttempt] {
        var attempts: [UpstreamAttempt] = []
        var position = 0
        while position < query.candidates.count {
            let candidate = query.candidates[position]
            let now = MonotonicClock.nowNanoseconds()
            let waitMs = (min(query.deadline.value, query.budgetEndNanoseconds) - now) / 1_000_000
            guard waitMs >= 1 else {
                attempts.append(UpstreamAttempt(index: candidate.index, outcome: .abandoned, latencyMs: 0))
                break
            }
            let shareMs = max(
                1, (query.budgetEndNanoseconds - now) / 1_000_000 / Int64(query.candidates.count - position))
            let timeoutMs = min(shareMs, waitMs)
            let result = resolve(
                query.host, family: query.family, via: candidate.endpoint, timeoutMs: Int(timeoutMs),
                settings: query.settings)
            let latency = Int((MonotonicClock.nowNanoseconds() - now) / 1_000_000)
            switch result {
            case .success(let answer):
                attempts.append(UpstreamAttempt(index: candidate.index, outcome: .answered(answer), latencyMs: latency))
                return attempts
            case .failure(let error) where error.code == .timeout && timeoutMs < shareMs:
                if query.deadline.value > MonotonicClock.nowNanoseconds() + 1_000_000 { continue }
                attempts.append(UpstreamAttempt(index: candidate.index, outcome: .abandoned, latencyMs: latency))
                return attempts
            case .failure(let error):
                attempts.append(UpstreamAttempt(index: candidate.index, outcome: .failed(error), latencyMs: latency))
                position += 1
            }
        }
        return attempts
    }

    /// Alibaba's batch endpoint (`/resolve?host=a,b`, at most 5 names), used to prefetch.
    func batch(
        _ hosts: [String], via endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamSettings
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        let codec = AlibabaV1(baseURL: endpoint.url ?? "", secret: settings.secretKey)
        let request = codec.batchRequest(hosts: hosts, family: .both, now: WallClock.nowSeconds())
        return fetch(request, timeoutMs: timeoutMs, settings: settings).flatMap {
            AlibabaV1.parseBatch(status: $0.status, body: $0.body, family: .both)
        }
    }

    private func resolve(
        _ host: String, family: AddressFamily, via endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamSettings
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let url = endpoint.url ?? ""
        switch endpoint.kind {
        case .system:
            return Self.system(host, family: family)
        case .alibaba:
            let codec = AlibabaV1(baseURL: url, secret: settings.secretKey)
            let request = codec.resolveRequest(host: host, family: family, now: WallClock.nowSeconds())
            return fetch(request, timeoutMs: timeoutMs, settings: settings).flatMap {
                AlibabaV1.parseResolve(status: $0.status, body: $0.body, family: family)
            }
        case .tencent:
            let request = TencentHTTPDNS(baseURL: url).request(host: host, family: family)
            return fetch(request, timeoutMs: timeoutMs, settings: settings).flatMap {
                TencentHTTPDNS.parse(status: $0.status, body: $0.body, family: family)
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

    /// DNS proper asks one record type at a time: A, then AAAA, combined into one answer.
    private func perType(
        _ family: AddressFamily, deadlineMs: Int,
        _ query: (DNSRecordType, Int) -> Result<UpstreamAnswer, UpstreamError>
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let deadline = MonotonicClock.nowNanoseconds() + Int64(deadlineMs) * 1_000_000
        var combined: UpstreamAnswer?
        for type in DNSRecordType.types(for: family) {
            let remaining = Int((deadline - MonotonicClock.nowNanoseconds()) / 1_000_000)
            guard remaining >= 1 else { return .failure(UpstreamError(.timeout)) }
            switch query(type, remaining) {
            case .failure(let error): return .failure(error)
            case .success(let answer): combined = combined.map { .combining($0, answer) } ?? answer
            }
        }
        return combined.map { .success($0) } ?? .failure(UpstreamError(.malformed("no query was made")))
    }

    private func fetch(
        _ request: UpstreamHTTPRequest, timeoutMs: Int, settings: UpstreamSettings
    ) -> Result<HTTPResponse, UpstreamError> {
        let httpRequest = HTTPRequest(
            url: request.url, method: request.method == .post ? .post : .get,
            headers: request.headers.map { HTTPHeader($0.name, $0.value) }, body: request.body, timeoutMs: timeoutMs,
            caFile: settings.caFile, tlsName: settings.tlsName)
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
