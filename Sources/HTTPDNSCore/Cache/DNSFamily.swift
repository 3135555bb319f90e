/// The address family of a cached answer: A (IPv4) or AAAA (IPv6) records are cached separately,
/// as each is a separate DNS question with its own TTL.
public enum DNSFamily: String, Sendable, Hashable, CaseIterable {
    /// A records; the wire name `"ipv4"` of API.md.
    case ipv4
    /// AAAA records; the wire name `"ipv6"` of API.md.
    case ipv6
}
