/// One `DomainTTL=MIN..MAX DOMAIN...` line: the TTL bounds of the names in (and under) these
/// domains, in place of `MinTTL=` and `MaxTTL=` (the SDKs' custom TTL hooks, as configuration).
public struct DomainTTL: Sendable, Equatable {
    /// Canonical domains: lowercase, without a trailing dot.
    public var domains: [String]
    /// The floor in milliseconds; nil: `MinTTL=`'s.
    public var minTTLMs: Int?
    /// The ceiling in milliseconds (`Int.max`: infinity); nil: `MaxTTL=`'s.
    public var maxTTLMs: Int?

    public init(domains: [String], minTTLMs: Int?, maxTTLMs: Int?) {
        self.domains = domains
        self.minTTLMs = minTTLMs
        self.maxTTLMs = maxTTLMs
    }
}

/// One `RankPorts=HOST:PORT` word: the addresses of `host` are ordered by how fast a TCP
/// connection to `port` opens (`AddressRanking`).
public struct RankPort: Sendable, Equatable {
    /// A canonical host name (lowercase, no trailing dot): that name only, not the names under it.
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}
