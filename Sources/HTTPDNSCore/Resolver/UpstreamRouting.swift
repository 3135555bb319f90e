/// Which upstreams a name may be asked of, and in which order (httpdnsd.conf(5), `Route=` and
/// `DefaultRoute=`): the route of the most specific routed domain the name is in or under, else
/// the default route. Without any route every name may go to every upstream, in the configured
/// order (the daemon's behaviour before routing existed).
///
/// A pure value: built once from the configuration, consulted by `ResolverMachine` when a flight
/// starts querying (a cache hit never looks). Upstreams are named by their index in
/// `ResolverSettings.upstreams`.
public struct UpstreamRouting: Sendable, Equatable {
    /// Each routed domain's upstreams, in the order they are asked.
    private let routes: [String: [Int]]
    /// The upstreams of a name outside every routed domain.
    public let defaultUpstreams: [Int]
    /// Whether any `Route=` is configured.
    public var isConfigured: Bool { !routes.isEmpty }

    /// Routes over `upstreams`, each route's and the default route's upstreams by name. A name
    /// that is not an upstream's is left out (the configuration parser refuses such a file); a
    /// nil `defaultRoute` is the system resolver once any route is set, else every upstream.
    public init(upstreams: [UpstreamEndpoint], routes: [UpstreamRoute] = [], defaultRoute: [String]? = nil) {
        func indices(_ names: [String]) -> [Int] {
            names.compactMap { name in upstreams.firstIndex { $0.name == name } }
        }
        var byDomain: [String: [Int]] = [:]
        for route in routes {
            let order = indices(route.upstreams)
            for domain in route.domains where byDomain[domain] == nil { byDomain[domain] = order }
        }
        self.routes = byDomain
        if let defaultRoute {
            defaultUpstreams = indices(defaultRoute)
        } else if !byDomain.isEmpty {
            defaultUpstreams = indices([UpstreamEndpoint.system.name])
        } else {
            defaultUpstreams = Array(upstreams.indices)
        }
    }

    /// The upstreams `host` (canonical: lowercase, no trailing dot) may be asked of, in order:
    /// those of its own domain's route, else of the closest routed domain above it, else the
    /// default route's.
    public func upstreams(for host: String) -> [Int] {
        guard !routes.isEmpty else { return defaultUpstreams }
        return DomainSuffixes.mostSpecific(host, in: routes) ?? defaultUpstreams
    }

    /// Whether `host` (canonical) is outside every route and every upstream it would be asked of
    /// is a billed service (`Kind.isBilled`).
    public func sendsOnlyToBilled(_ host: String, upstreams: [UpstreamEndpoint]) -> Bool {
        guard !isRouted(host) else { return false }
        let asked = defaultUpstreams
        return !asked.isEmpty && asked.allSatisfy { upstreams[$0].kind.isBilled }
    }

    /// `status`'s warning for the upstream at `index` when every name outside the routes goes to
    /// billed services only and it is one of them; nil otherwise.
    public func billedDefaultWarning(_ index: Int, upstreams: [UpstreamEndpoint]) -> String? {
        let asked = defaultUpstreams
        guard asked.contains(index), asked.allSatisfy({ upstreams[$0].kind.isBilled }) else { return nil }
        let scope = isConfigured ? "every name outside the Route= domains" : "every name (no Route= is set)"
        return "\(scope) goes to billed upstreams only: each query is billed, and a name outside the account's "
            + "console gets an empty answer; add Route= lines for the account's domains"
    }

    /// Whether `host` (canonical) falls under a `Route=` domain.
    public func isRouted(_ host: String) -> Bool {
        !routes.isEmpty && DomainSuffixes.mostSpecific(host, in: routes) != nil
    }

    /// The routed domains the upstream at `index` serves, sorted, with "." for the names outside
    /// every routed domain when the default route lists it; nil when no route is configured.
    public func domains(of index: Int) -> [String]? {
        guard isConfigured else { return nil }
        var domains = routes.filter { $0.value.contains(index) }.map(\.key).sorted()
        if defaultUpstreams.contains(index) { domains.append(".") }
        return domains
    }
}
