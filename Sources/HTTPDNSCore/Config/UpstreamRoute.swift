/// One `Route=UPSTREAM[,UPSTREAM...] DOMAIN...` line: names in these domains (and under them)
/// go to these upstreams only, in this order.
public struct UpstreamRoute: Sendable, Equatable {
    /// Canonical domains: lowercase, without a trailing dot.
    public var domains: [String]
    /// Upstream names (`UpstreamEndpoint.name`), in the order they are asked.
    public var upstreams: [String]

    public init(domains: [String], upstreams: [String]) {
        self.domains = domains
        self.upstreams = upstreams
    }
}
