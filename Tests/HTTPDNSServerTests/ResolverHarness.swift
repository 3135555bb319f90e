import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSSystem

/// The resolver service in-process: its loop on a manual clock and an upstream transport the
/// test answers by hand. Time moves only when the test says, so flights, deadlines, fallback,
/// health and prefetch are tested without sockets or sleeps (as unbound's replay tests and
/// swift-nio's EmbeddedEventLoop do).
final class ResolverHarness {
    let clock = ManualClock()
    let loop: EventLoop
    let transport = FakeUpstreamTransport()
    let service: ResolverService
    let log = LogLines()

    /// A resolver with the `[Resolver]` lines given (upstream URLs are never contacted).
    init(_ resolverLines: String) throws {
        loop = try EventLoop(clock: clock)
        let configuration = try DaemonConfiguration.parse(text: "[Resolver]\n" + resolverLines, path: "test").get().0
        let log = self.log
        service = ResolverService(
            configuration: configuration, rules: BasicDomainRules(), loop: loop,
            logger: Logger(threshold: .debug) { _, line in log.append(line) }, transport: transport)
    }

    /// Starts a resolve as `uid`; its reply lands in the call.
    @discardableResult
    func resolve(
        _ host: String, family: AddressFamily = .both, uid: UInt32 = 0, account: UInt32? = nil,
        timeoutMs: Int? = nil, allowStale: Bool = true, staleAfterMs: Int? = nil, billedRoutesOnly: Bool = false
    ) -> ResolveCall {
        let call = ResolveCall()
        service.resolve(
            ResolveParams(
                host: host, family: family, allowStale: allowStale, timeoutMs: timeoutMs, staleAfterMs: staleAfterMs,
                billedRoutesOnly: billedRoutesOnly),
            uid: uid, account: account
        ) { call.outcome = $0 }
        return call
    }

    /// Moves the clock on and fires whatever timers became due.
    func advance(milliseconds: Int64) {
        clock.advance(milliseconds: milliseconds)
        loop.runTurn(maxWaitMilliseconds: 0)
    }

    /// Moves the clock on in steps of `step`, firing timers at each.
    func advance(seconds: Int64) { advance(milliseconds: seconds * 1_000) }

    /// The status of the upstreams, by name.
    var upstreams: [String: UpstreamStatus] {
        Dictionary(uniqueKeysWithValues: service.upstreamStatus.map { ($0.name, $0) })
    }

    var cache: StatusResult.Cache { service.cacheStatus }
}

/// One resolve's reply, once it came.
final class ResolveCall {
    var outcome: Result<ResolveResult, RPCError>?

    var result: ResolveResult? {
        if case .success(let result)? = outcome { return result }
        return nil
    }

    var error: RPCError? {
        if case .failure(let error)? = outcome { return error }
        return nil
    }

    var isAnswered: Bool { outcome != nil }

    /// `data.reason` of an error reply.
    var reason: String? { error?.data["reason"]?.stringValue }
}

/// The log lines of a harness.
final class LogLines: @unchecked Sendable {
    // @unchecked: appended and read on the test's thread only (the loop runs there).
    private(set) var lines: [String] = []
    func append(_ line: String) { lines.append(line) }
}

/// An upstream transport the test drives: it records every exchange the resolver asks for and
/// answers one when the test says (on the test's thread, which is the loop's).
final class FakeUpstreamTransport: UpstreamTransport {
    /// One exchange asked for, answered or not.
    final class Exchange {
        let request: UpstreamAttemptRequest
        fileprivate let completion: (Result<UpstreamAnswer, UpstreamError>) -> Void
        private(set) var isDone = false

        init(_ request: UpstreamAttemptRequest, _ completion: @escaping (Result<UpstreamAnswer, UpstreamError>) -> Void)
        {
            self.request = request
            self.completion = completion
        }

        var host: String { request.host }
        var upstream: String { request.endpoint.name }

        /// Completes the exchange (once).
        func complete(_ result: Result<UpstreamAnswer, UpstreamError>) {
            precondition(!isDone, "an exchange is answered once")
            isDone = true
            completion(result)
        }

        /// Answers with these addresses.
        func answer(v4: [String] = [], v6: [String] = [], ttl: Int = 300, nameExists: Bool = true) {
            complete(
                .success(
                    UpstreamAnswer(
                        ipv4: v4.compactMap { IPAddress($0) }, ipv6: v6.compactMap { IPAddress($0) }, ttl: ttl,
                        nameExists: nameExists)))
        }

        /// Fails with `code`.
        func fail(_ code: UpstreamError.Code) { complete(.failure(UpstreamError(code))) }
    }

    /// One batch request asked for.
    final class Batch {
        let request: UpstreamBatchRequest
        let completion: (Result<[String: UpstreamAnswer], UpstreamError>) -> Void

        init(
            _ request: UpstreamBatchRequest,
            _ completion: @escaping (Result<[String: UpstreamAnswer], UpstreamError>) -> Void
        ) {
            self.request = request
            self.completion = completion
        }
    }

    private(set) var exchanges: [Exchange] = []
    private(set) var batches: [Batch] = []
    private(set) var isShutDown = false

    func send(
        _ request: UpstreamAttemptRequest, completion: @escaping (Result<UpstreamAnswer, UpstreamError>) -> Void
    ) {
        exchanges.append(Exchange(request, completion))
    }

    func send(
        _ request: UpstreamBatchRequest,
        completion: @escaping (Result<[String: UpstreamAnswer], UpstreamError>) -> Void
    ) {
        batches.append(Batch(request, completion))
    }

    func shutdown() { isShutDown = true }

    /// The settings reloads handed over, in order.
    private(set) var applied: [UpstreamSettings] = []

    func apply(_ settings: UpstreamSettings) { applied.append(settings) }

    /// Exchanges not answered yet.
    var pending: [Exchange] { exchanges.filter { !$0.isDone } }

    /// Exchanges asked for `host` (answered or not).
    func exchanges(for host: String) -> [Exchange] { exchanges.filter { $0.host == host } }

    /// The one unanswered exchange for `host`.
    func pending(_ host: String) -> Exchange? { pending.first { $0.host == host } }
}
