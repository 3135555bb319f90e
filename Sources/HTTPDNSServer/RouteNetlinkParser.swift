import HTTPDNSCore

/// Reads what an rtnetlink socket receives (rtnetlink(7), netlink(7)) into `NetworkEvent`s: the
/// address and route messages, every length checked against what is there, anything else
/// skipped. No policy: which events are a change is `NetworkChangeMachine`'s call.
///
/// The layouts are the kernel's ABI (linux/netlink.h, linux/rtnetlink.h, linux/if_addr.h),
/// little-endian on every machine this runs on; a message that does not fit is skipped, and a
/// header whose length runs past the data ends the read.
enum RouteNetlinkParser {
    // nlmsghdr: len u32, type u16, flags u16, seq u32, pid u32.
    static let headerLength = 16
    static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    static let newAddress: UInt16 = 20  // RTM_NEWADDR
    static let deleteAddress: UInt16 = 21  // RTM_DELADDR
    static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    static let deleteRoute: UInt16 = 25  // RTM_DELROUTE
    static let getAddress: UInt16 = 22  // RTM_GETADDR
    /// NLM_F_MULTI: one part of a multipart answer (a dump), not a notification.
    static let multipart: UInt16 = 0x2
    static let inet: UInt8 = 2  // AF_INET
    static let inet6: UInt8 = 10  // AF_INET6
    // ifaddrmsg: family u8, prefixlen u8, flags u8, scope u8, index u32.
    static let addressMessageLength = 8
    static let addressAttribute: UInt16 = 1  // IFA_ADDRESS
    static let localAttribute: UInt16 = 2  // IFA_LOCAL
    // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type (u8 each), flags u32.
    static let routeMessageLength = 12
    static let tableAttribute: UInt16 = 15  // RTA_TABLE
    static let clonedFlag: UInt32 = 0x200  // RTM_F_CLONED

    /// The events of one datagram (several messages, each padded to 4 bytes).
    static func events(in data: ArraySlice<UInt8>) -> [NetworkEvent] {
        var events: [NetworkEvent] = []
        var offset = data.startIndex
        while data.endIndex - offset >= headerLength {
            let length = Int(u32(data, offset))
            guard length >= headerLength, length <= data.endIndex - offset else { break }
            let type = u16(data, offset + 4)
            let flags = u16(data, offset + 6)
            let body = data[(offset + headerLength)..<(offset + length)]
            switch type {
            case newAddress, deleteAddress:
                if let address = address(body) {
                    events.append(
                        .address(address, added: type == newAddress, listed: flags & multipart != 0))
                }
            case newRoute, deleteRoute:
                if let route = route(body) { events.append(.route(route, added: type == newRoute)) }
            case overrun:
                events.append(.lost)
            default:
                break
            }
            // NLMSG_ALIGN; the last message of a datagram may go without its padding.
            let next = offset + (length + 3) & ~3
            guard next <= data.endIndex else { break }
            offset = next
        }
        return events
    }

    /// An ifaddrmsg and its attributes: IFA_LOCAL is the interface's own address (IFA_ADDRESS is
    /// the peer's on a point-to-point link), IFA_ADDRESS when there is no IFA_LOCAL.
    static func address(_ body: ArraySlice<UInt8>) -> NetworkAddress? {
        guard body.count >= addressMessageLength, let family = family(body[body.startIndex]) else { return nil }
        let start = body.startIndex
        let size = family == .ipv4 ? 4 : 16
        var local: ArraySlice<UInt8>?
        var peer: ArraySlice<UInt8>?
        for (type, value) in attributes(body.dropFirst(addressMessageLength)) where value.count == size {
            if type == localAttribute { local = value }
            if type == addressAttribute { peer = value }
        }
        guard let bytes = local ?? peer else { return nil }
        return NetworkAddress(
            interface: u32(body, start + 4), family: family, bytes: Array(bytes), prefixLength: body[start + 1])
    }

    /// The family byte both ifaddrmsg and rtmsg start with; nil for one the daemon does not resolve.
    static func family(_ byte: UInt8) -> IPFamily? {
        switch byte {
        case inet: return .ipv4
        case inet6: return .ipv6
        default: return nil
        }
    }

    /// An rtmsg and its RTA_TABLE (tables past 255 are only there).
    static func route(_ body: ArraySlice<UInt8>) -> NetworkRoute? {
        guard body.count >= routeMessageLength, let family = family(body[body.startIndex]) else { return nil }
        let start = body.startIndex
        var table = UInt32(body[start + 4])
        for (type, value) in attributes(body.dropFirst(routeMessageLength)) where type == tableAttribute {
            if value.count == 4 { table = u32(value, value.startIndex) }
        }
        return NetworkRoute(
            family: family, destinationPrefix: body[start + 1], table: table, routingProtocol: body[start + 5],
            type: body[start + 7], cloned: u32(body, start + 8) & clonedFlag != 0)
    }

    /// The rtattrs of a message body (len u16, type u16, value, padded to 4), up to the first one
    /// that does not fit.
    static func attributes(_ data: ArraySlice<UInt8>) -> [(type: UInt16, value: ArraySlice<UInt8>)] {
        var found: [(UInt16, ArraySlice<UInt8>)] = []
        var offset = data.startIndex
        while data.endIndex - offset >= 4 {
            let length = Int(u16(data, offset))
            guard length >= 4, length <= data.endIndex - offset else { break }
            // The top bits are NLA_F_NESTED and NLA_F_NET_BYTEORDER.
            found.append((u16(data, offset + 2) & 0x3fff, data[(offset + 4)..<(offset + length)]))
            offset += min((length + 3) & ~3, data.endIndex - offset)
        }
        return found
    }

    /// An RTM_GETADDR dump request for every address of every family, sequence `sequence`.
    static func addressDumpRequest(sequence: UInt32) -> [UInt8] {
        let length = headerLength + addressMessageLength
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        append32(UInt32(length), to: &bytes)
        append16(getAddress, to: &bytes)
        append16(0x1 | 0x300, to: &bytes)  // NLM_F_REQUEST | NLM_F_DUMP
        append32(sequence, to: &bytes)
        append32(0, to: &bytes)  // the kernel fills in the port
        bytes += [UInt8](repeating: 0, count: addressMessageLength)  // AF_UNSPEC: every family
        return bytes
    }

    private static func u16(_ data: ArraySlice<UInt8>, _ at: Int) -> UInt16 {
        UInt16(data[at]) | UInt16(data[at + 1]) << 8
    }

    private static func u32(_ data: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        UInt32(data[at]) | UInt32(data[at + 1]) << 8 | UInt32(data[at + 2]) << 16 | UInt32(data[at + 3]) << 24
    }

    private static func append16(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes += [UInt8(value & 0xff), UInt8(value >> 8)]
    }

    private static func append32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }
}
