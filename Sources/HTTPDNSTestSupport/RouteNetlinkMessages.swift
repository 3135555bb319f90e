import HTTPDNSCore

/// rtnetlink messages built by hand from linux/netlink.h and linux/rtnetlink.h, independently of
/// the daemon's parser, for its tests and its fuzz target's round trip.
public enum RouteNetlinkMessages {
    /// One message: nlmsghdr (length, type, flags, sequence, port) and `body`, padded to 4 bytes.
    public static func message(type: UInt16, flags: UInt16 = 0, body: [UInt8]) -> [UInt8] {
        var bytes = le32(UInt32(16 + body.count)) + le16(type) + le16(flags) + le32(0) + le32(0) + body
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    /// One rtattr, padded to 4 bytes.
    public static func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        var bytes = le16(UInt16(4 + value.count)) + le16(type) + value
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    /// RTM_NEWADDR or RTM_DELADDR (NLM_F_MULTI when `listed`), with IFA_ADDRESS `peer` (the
    /// address itself unless given) and IFA_LOCAL.
    public static func address(_ address: NetworkAddress, added: Bool, listed: Bool = false, peer: [UInt8]? = nil)
        -> [UInt8]
    {
        let body =
            [family(address.family), address.prefixLength, 0, 0] + le32(address.interface)
            + attribute(1, peer ?? address.bytes) + attribute(2, address.bytes)
        return message(type: added ? 20 : 21, flags: listed ? 0x2 : 0, body: body)
    }

    /// RTM_NEWROUTE or RTM_DELROUTE, with RTA_TABLE (and rtm_table as the kernel fills it:
    /// RT_TABLE_COMPAT past 255).
    public static func route(_ route: NetworkRoute, added: Bool) -> [UInt8] {
        let compatTable = route.table > 255 ? 252 : UInt8(route.table)
        let body =
            [family(route.family), route.destinationPrefix, 0, 0, compatTable, route.routingProtocol, 0, route.type]
            + le32(route.cloned ? 0x200 : 0) + attribute(15, le32(route.table))
        return message(type: added ? 24 : 25, body: body)
    }

    /// NLMSG_OVERRUN.
    public static let overrun = message(type: 4, body: [])

    /// The messages saying `events`, in order, in one datagram.
    public static func datagram(_ events: [NetworkEvent]) -> [UInt8] {
        events.flatMap { event -> [UInt8] in
            switch event {
            case .address(let address, let added, let listed):
                return Self.address(address, added: added, listed: listed)
            case .route(let route, let added): return Self.route(route, added: added)
            case .lost: return overrun
            }
        }
    }

    private static func family(_ family: IPFamily) -> UInt8 { family == .ipv4 ? 2 : 10 }
    private static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xff), UInt8(value >> 8)] }
    private static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xff) } }
}
