/// `OnNetworkChange=`: what a change of the machine's addresses or routes does to the cached
/// host answers (HTTPDNS services choose answers for the client's network).
public enum NetworkChangePolicy: String, Sendable, Equatable, CaseIterable {
    /// Every cached host answer is served until it is asked again, which its next use (or
    /// `Prefetch=`) does at once.
    case refresh
    /// Every cached host answer is dropped: the next resolve of a name waits for its upstream.
    case flush
    /// Changes are logged and counted, answers stay as they are.
    case ignore
}

/// One address of an interface, as the kernel reports it.
public struct NetworkAddress: Sendable, Hashable {
    /// The interface index (`ifa_index`).
    public var interface: UInt32
    public var family: IPFamily
    /// The address's bytes (4 or 16).
    public var bytes: [UInt8]
    /// The prefix length (`ifa_prefixlen`).
    public var prefixLength: UInt8

    public init(interface: UInt32, family: IPFamily, bytes: [UInt8], prefixLength: UInt8) {
        self.interface = interface
        self.family = family
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// An IPv6 link-local address (fe80::/10): one appears with every interface that comes up
    /// (a container's veth pair) and none is a way out of the machine.
    public var isIPv6LinkLocal: Bool {
        family == .ipv6 && bytes.count == 16 && bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
    }

    /// `10.9.9.9/32` or `2001:db8::1/64`.
    public var description: String {
        let text = IPAddress(bytes: bytes).map { $0.description } ?? "?"
        return "\(text)/\(prefixLength)"
    }
}

/// One route, as the kernel reports it (the fields that tell which routes matter).
public struct NetworkRoute: Sendable, Hashable {
    /// `RT_TABLE_LOCAL`: the kernel's routes to the machine's own addresses.
    public static let localTable: UInt32 = 255
    /// `RTPROT_KERNEL`: a route the kernel made for an address or a link.
    public static let kernelProtocol: UInt8 = 2
    /// `RTN_UNICAST`: a route to a gateway or a link.
    public static let unicastType: UInt8 = 1

    public var family: IPFamily
    /// `rtm_dst_len`: 0 for a default route.
    public var destinationPrefix: UInt8
    /// `RTA_TABLE`, else `rtm_table`.
    public var table: UInt32
    /// `rtm_protocol`: who made it (`RTPROT_KERNEL`, `RTPROT_BOOT`, `RTPROT_DHCP`, `RTPROT_RA` ...).
    public var routingProtocol: UInt8
    /// `rtm_type`.
    public var type: UInt8
    /// `RTM_F_CLONED`: a cached route (IPv6's exceptions), not one of a table.
    public var cloned: Bool

    public init(
        family: IPFamily, destinationPrefix: UInt8, table: UInt32, routingProtocol: UInt8, type: UInt8, cloned: Bool
    ) {
        self.family = family
        self.destinationPrefix = destinationPrefix
        self.table = table
        self.routingProtocol = routingProtocol
        self.type = type
        self.cloned = cloned
    }

    /// Whether the route can change where the machine's traffic goes: a unicast route of a
    /// routing table (a VPN's table too) that someone set up, not one the kernel made for an
    /// address or a link that came up (the address event says that, and a container's link
    /// leads nowhere), nor a cached one, nor the local table's.
    public var isRouting: Bool {
        !cloned && table != Self.localTable && routingProtocol != Self.kernelProtocol && type == Self.unicastType
    }
}

/// What the kernel said, as the daemon's netlink reader turns its messages into events
/// (no policy: which of them is a change is `NetworkChangeMachine`'s call).
public enum NetworkEvent: Sendable, Equatable {
    /// An address appeared (`added`) or went. `listed`: part of the answer to the daemon's own
    /// request for every address at start (what was there already), not a notification.
    case address(NetworkAddress, added: Bool, listed: Bool)
    /// A route appeared or went.
    case route(NetworkRoute, added: Bool)
    /// The kernel dropped notifications (the socket's buffer overran): something changed.
    case lost
}
