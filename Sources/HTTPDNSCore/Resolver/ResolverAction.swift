import HTTPDNSProtocol

/// One exchange with one upstream, for the transport to carry out within `timeoutMs`.
public struct UpstreamAttemptRequest: Sendable, Equatable {
    /// Names the attempt in `ResolverMachine.attemptFinished`.
    public var id: UInt64
    public var host: String
    public var family: AddressFamily
    public var endpoint: UpstreamEndpoint
    public var timeoutMs: Int

    public init(id: UInt64, host: String, family: AddressFamily, endpoint: UpstreamEndpoint, timeoutMs: Int) {
        self.id = id
        self.host = host
        self.family = family
        self.endpoint = endpoint
        self.timeoutMs = timeoutMs
    }
}

/// One batch request (Alibaba's `/resolve?host=a,b`, a paid Tencent form's `dn=a,b`) of at most
/// the upstream's `maxBatchHosts` names, used to prefetch.
public struct UpstreamBatchRequest: Sendable, Equatable {
    /// Names the batch in `ResolverMachine.batchFinished`.
    public var id: UInt64
    public var hosts: [String]
    public var endpoint: UpstreamEndpoint
    public var timeoutMs: Int

    public init(id: UInt64, hosts: [String], endpoint: UpstreamEndpoint, timeoutMs: Int) {
        self.id = id
        self.hosts = hosts
        self.endpoint = endpoint
        self.timeoutMs = timeoutMs
    }
}

/// A timer the resolver asks for; when it fires, the driver calls `ResolverMachine.timerFired`.
public enum ResolverTimer: Hashable, Sendable {
    /// A waiting caller's own `timeoutMs` is over.
    case caller(UInt64)
    /// A prefetched name is due for its refresh.
    case prefetch(String)
    /// A group of names prefetched together is due for its refresh (a batch of that id).
    case prefetchBatch(UInt64)
}

/// How loud a resolver log line is.
public enum ResolverLogLevel: Sendable, Equatable {
    case info, warning
}

/// What the driver does for the resolver: every side effect of its policy.
public enum ResolverAction: Sendable {
    /// Reply to a waiting caller (once per caller).
    case answer(caller: UInt64, Result<ResolveResult, RPCError>)
    /// Run one upstream exchange; report with `attemptFinished`.
    case query(UpstreamAttemptRequest)
    /// Run one batch request; report with `batchFinished`.
    case queryBatch(UpstreamBatchRequest)
    /// Arm (or re-arm) a timer for `at`, on the same clock as the `now` the machine is given.
    case armTimer(ResolverTimer, at: MonotonicInstant)
    /// Disarm a timer (it may have fired already).
    case cancelTimer(ResolverTimer)
    /// Ask the fleet for `host` (`ShareCache=`); report with `fleetAnswered` or
    /// `fleetDeferredToUpstreams`.
    case askFleet(flight: UInt64, host: String, families: [IPFamily], timeoutMs: Int)
    /// Tell the fleet what the upstreams answered for a flight it deferred: these fresh cache
    /// entries (publish them, from their remaining lifetime), or nil when they failed.
    case reportToFleet(flight: UInt64, answered: [DNSCacheEntry]?)
    /// A log line (never holding a secret: the machine sees none).
    case log(ResolverLogLevel, String)
}
