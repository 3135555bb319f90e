import CHTTPDNSShims
import Glibc

/// An rtnetlink socket (rtnetlink(7)) subscribed to the kernel's address and route notifications:
/// non-blocking, read from the event loop.
public struct RouteNetlinkSocket: Sendable {
    /// RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_IFADDR | RTMGRP_IPV6_ROUTE.
    public static let addressAndRouteGroups: UInt32 = 0x10 | 0x40 | 0x100 | 0x400
    /// Room for a burst (an interface with a few hundred routes coming up) between two reads.
    static let receiveBufferBytes: Int32 = 1 << 20

    public let fd: FileDescriptor

    /// What one read brought.
    public enum Received: Sendable, Equatable {
        /// A datagram of this many bytes (one or more messages).
        case datagram(Int)
        /// Nothing more for now.
        case wouldBlock
        /// ENOBUFS: the kernel dropped notifications because the buffer was full.
        case overrun
    }

    /// Opens the socket and subscribes to `groups`.
    public init(groups: UInt32 = addressAndRouteGroups) throws(SystemError) {
        fd = FileDescriptor(
            rawValue: try syscall("socket AF_NETLINK") {
                chttpdns_route_netlink_open(groups, Self.receiveBufferBytes)
            })
    }

    /// Reads one datagram into `buffer` (MSG_TRUNC is not asked for: a longer one is cut, and
    /// the parser drops the message that does not fit).
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Received {
        while true {
            let count = recv(fd.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count >= 0 { return .datagram(count) }
            switch Errno.current {
            case .interrupted: continue
            case .resourceTemporarilyUnavailable, .wouldBlock: return .wouldBlock
            case Errno(rawValue: ENOBUFS): return .overrun
            case let code: throw SystemError(errno: code, call: "recv netlink")
            }
        }
    }

    /// Sends a request to the kernel.
    public func send(_ bytes: [UInt8]) throws(SystemError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try fd.send(raw) } }
        _ = try result.get()
    }

    public func close() { fd.close() }
}
