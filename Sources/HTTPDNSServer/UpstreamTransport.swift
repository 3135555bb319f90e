import HTTPDNSCore
import HTTPDNSCurl
import HTTPDNSSystem

/// One query to run on a worker thread: the upstreams to try, in order, within one deadline.
struct UpstreamQuery: Sendable {
    var host: String
    var family: ResolveFamily
    /// (index into the configured list, endpoint), already ordered by health.
    var candidates: [(index: Int, endpoint: UpstreamEndpoint)]
    var deadlineNanoseconds: Int64
    var settings: UpstreamSettings
}

/// What every upstream request shares. The secret is only ever placed in signed URLs.
struct UpstreamSettings: Sendable {
    var secretKey: String?
    var caFile: String?
    var tlsName: String?
    var dohPost: Bool
}

/// The outcome of one attempt against one upstream.
struct UpstreamAttempt: Sendable {
    var index: Int
    var result: Result<UpstreamAnswer, UpstreamError>
    var latencyMs: Int
}

/// Runs upstream queries; lives on a worker thread with its own libcurl handle (connection reuse).
final class UpstreamWorker {
    private let http = HTTPClient()

    /// Tries the candidates in order until one answers (an answer may be "no such name"),
    /// never past the deadline. Returns every attempt, for health bookkeeping on the loop.
    func run(_ query: UpstreamQuery) -> [UpstreamAttempt] {
        var attempts: [UpstreamAttempt] = []
        for (position, candidate) in query.candidates.enumerated() {
            let remainingMs = (query.deadlineNanoseconds - MonotonicClock.nowNanoseconds()) / 1_000_000
            guard remainingMs >= 1 else { break }
            // A hanging upstream may use only its share of the budget, so failover happens within
            // Timeout=; the last one gets whatever is left.
            let share = remainingMs / Int64(query.candidates.count - position)
            let started = MonotonicClock.nowNanoseconds()
            let result = resolve(
                query.host, family: query.family, via: candidate.endpoint, timeoutMs: Int(max(share, 1)),
                settings: query.settings)
            let latency = Int((MonotonicClock.nowNanoseconds() - started) / 1_000_000)
            attempts.append(UpstreamAttempt(index: candidate.index, result: result, latencyMs: latency))
            if case .success = result { break }
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
        _ host: String, family: ResolveFamily, via endpoint: UpstreamEndpoint, timeoutMs: Int,
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
        _ family: ResolveFamily, deadlineMs: Int,
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

    /// getaddrinfo has no TTL: answers live for the SDKs' local-DNS default (UPSTREAMS.md §4).
    static func system(_ host: String, family: ResolveFamily) -> Result<UpstreamAnswer, UpstreamError> {
        switch SystemResolver.lookup(host, ipv4: family.wantsIPv4, ipv6: family.wantsIPv6) {
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
