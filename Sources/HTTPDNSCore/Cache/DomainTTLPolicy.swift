/// The bounds a TTL is clamped to, in seconds: `minTTL` at most `maxTTL`, both at most RFC 2181's
/// 2^31-1.
public struct TTLBounds: Sendable, Equatable {
    public let minTTL: Int
    public let maxTTL: Int

    /// Bounds from a floor and a ceiling: a negative floor is 0, a ceiling below the floor is the
    /// floor, and neither goes past `UpstreamAnswer.maxTTL`.
    public init(minTTL: Int, maxTTL: Int) {
        self.minTTL = min(max(0, minTTL), UpstreamAnswer.maxTTL)
        self.maxTTL = min(max(self.minTTL, maxTTL), UpstreamAnswer.maxTTL)
    }

    /// `ttl` within the bounds; negative input counts as 0.
    public func clamp(ttl: Int) -> Int {
        min(max(max(ttl, 0), minTTL), maxTTL)
    }
}

/// `DomainTTL=`: per domain, the TTL bounds of the names equal to it or under it, the most
/// specific domain's, as `Route=` picks a name's upstreams. A pure value built from the
/// configuration; names outside every listed domain have none (the global `MinTTL=`/`MaxTTL=`).
public struct DomainTTLPolicy: Sendable, Equatable {
    private let bounds: [String: TTLBounds]

    /// Whether no domain has bounds of its own.
    public var isEmpty: Bool { bounds.isEmpty }

    /// The bounds of each line's domains (canonical names); a domain listed twice keeps its first
    /// bounds (the configuration parser refuses such a file).
    public init(_ lines: [(domains: [String], bounds: TTLBounds)] = []) {
        var byDomain: [String: TTLBounds] = [:]
        for line in lines {
            for domain in line.domains where byDomain[domain] == nil { byDomain[domain] = line.bounds }
        }
        bounds = byDomain
    }

    /// The bounds of the most specific listed domain `host` (canonical) is in or under, if any.
    public func bounds(for host: String) -> TTLBounds? {
        guard !bounds.isEmpty else { return nil }
        return DomainSuffixes.mostSpecific(host, in: bounds)
    }
}

/// Lookups of a name's most specific domain in a table keyed by domain.
enum DomainSuffixes {
    /// The value of `host` itself in `table`, else of the closest domain above it, else nil.
    static func mostSpecific<Value>(_ host: String, in table: [String: Value]) -> Value? {
        var suffix = Substring(host)
        while true {
            if let value = table[String(suffix)] { return value }
            guard let dot = suffix.firstIndex(of: ".") else { return nil }
            suffix = suffix[suffix.index(after: dot)...]
        }
    }
}
