import HTTPDNSProtocol

/// An IP address family: the one family type of every layer below the wire (an address, a
/// cached answer, an upstream question, a stored row). The raw values are the wire's and the
/// store's names (`ipv4`, `ipv6`).
public enum IPFamily: String, Sendable, Hashable, CaseIterable {
    /// IPv4 addresses, A records.
    case ipv4
    /// IPv6 addresses, AAAA records.
    case ipv6
}

/// A request's `family` (`ipv4`, `ipv6` or `both`) is the selection of families it asks for.
extension AddressFamily {
    /// The families asked for, IPv4 first.
    public var families: [IPFamily] {
        switch self {
        case .ipv4: return [.ipv4]
        case .ipv6: return [.ipv6]
        case .both: return [.ipv4, .ipv6]
        }
    }

    /// Whether `family` is asked for.
    public func includes(_ family: IPFamily) -> Bool {
        self == .both || rawValue == family.rawValue
    }
}
