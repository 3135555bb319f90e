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
    /// Runs one batch request (prefetch) of an upstream whose descriptor batches.
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

/// What every upstream request shares: the descriptors' settings, and the HTTP client's trust.
struct UpstreamSettings: Sendable {
    var query: UpstreamQuerySettings
    var caFile: String?
    var tlsName: String?

    init(_ resolver: DaemonConfiguration.Resolver) {
        query = UpstreamQuerySettings(resolver)
        caFile = resolver.caFile
        tlsName = resolver.tlsName
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

/// Runs upstream exchanges; lives on a worker thread with its own libcurl handle. What is asked
/// and how is the endpoint's descriptor's; the worker only carries it out.
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
        request.endpoint.descriptor.resolve(
            request.host, family: request.family, at: request.endpoint, timeoutMs: request.timeoutMs,
            settings: settings.query, over: transport(settings))
    }

    /// A batch of names, used to prefetch, of an upstream whose descriptor batches.
    func batch(_ request: UpstreamBatchRequest, settings: UpstreamSettings) -> Result<
        [String: UpstreamAnswer], UpstreamError
    > {
        request.endpoint.descriptor.resolveBatch(
            request.hosts, at: request.endpoint, timeoutMs: request.timeoutMs, settings: settings.query,
            over: transport(settings))
    }

    /// Alibaba's scheduler (`/{account}/ss`), signed with the secret when there is one.
    func schedule(_ fetch: ServiceAddressFetch, settings: UpstreamSettings) -> Result<[IPAddress], UpstreamError> {
        var generator = SystemRandomNumberGenerator()
        let nonce = String(generator.next() as UInt64, radix: 16)
        return AlibabaScheduler.ask(fetch, secret: settings.query.secretKey, nonce: nonce, over: transport(settings))
    }

    private func transport(_ settings: UpstreamSettings) -> CurlExchangeTransport {
        CurlExchangeTransport(
            http: http, clock: clock, serviceClock: serviceClock, caFile: settings.caFile, tlsName: settings.tlsName)
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
