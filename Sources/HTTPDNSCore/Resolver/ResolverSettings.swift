/// What the resolver's policy works with: the `[Resolver]` section and the daemon's fixed bounds,
/// as one value (so a new configuration can replace it whole).
public struct ResolverSettings: Sendable, Equatable {
    /// `Upstream=`, tried in this order while healthy.
    public var upstreams: [UpstreamEndpoint]
    /// `Route=` and `DefaultRoute=`: which of them each name may be asked of.
    public var routing: UpstreamRouting
    /// `Timeout=`: one resolution's budget across every upstream, in milliseconds.
    public var timeoutMs: Int
    /// `ServeStale=`.
    public var serveStale: Bool
    /// `NegativeTTL=` in milliseconds: how soon a prefetched name without an answer is asked again.
    public var negativeTTLMs: Int
    /// The cache's TTL clamps, stale window and size.
    public var limits: DNSCacheLimits
    /// Upstream queries in flight: caps per uid and in total, and workers per owner.
    public var flightLimits: FlightLimits
    /// New upstream queries per uid: per second, and at once.
    public var queryRatePerUser: Int
    public var queryBurstPerUser: Int
    /// `Prefetch=`, as configured (checked again when prefetching starts).
    public var prefetch: [String]
    /// `Static=`.
    public var staticAnswers: [StaticAnswer]
    /// The uid the daemon runs as: it may flush the shared cache, as root may.
    public var daemonUID: UInt32
    /// Where scheduled and backed-up upstreams' service addresses come from.
    public var serviceAddresses: ServiceAddressSettings

    /// The settings of a `[Resolver]` section, for `workers` upstream workers of which one owner
    /// may hold `workersPerOwner`.
    public init(
        _ resolver: DaemonConfiguration.Resolver, workers: Int, workersPerOwner: Int, daemonUID: UInt32
    ) {
        upstreams = resolver.upstreams
        routing = UpstreamRouting(
            upstreams: resolver.upstreams, routes: resolver.routes, defaultRoute: resolver.defaultRoute)
        timeoutMs = resolver.timeoutMs
        serveStale = resolver.serveStale
        negativeTTLMs = resolver.negativeTTLMs
        limits = DNSCacheLimits(resolver)
        flightLimits = FlightLimits(
            maxTotal: resolver.maxUpstreamQueries, maxPerUser: resolver.maxUpstreamQueriesPerUser, workers: workers,
            workersPerOwner: workersPerOwner)
        queryRatePerUser = resolver.upstreamQueryRatePerUser
        queryBurstPerUser = resolver.upstreamQueryBurstPerUser
        prefetch = resolver.prefetch
        staticAnswers = resolver.staticAnswers
        self.daemonUID = daemonUID
        serviceAddresses = ServiceAddressSettings(resolver)
    }
}
