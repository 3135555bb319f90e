import HTTPDNSCore
import HTTPDNSSystem

/// Reads the kernel's address and route notifications from an rtnetlink socket on the loop and
/// hands them on as `NetworkEvent`s; it decides nothing (`NetworkChangeMachine` does). At start it
/// asks for every address once, so that the machine knows what is there already.
final class NetworkWatcher: EventHandler {
    private let socket: RouteNetlinkSocket
    private let loop: EventLoop
    private let onEvents: ([NetworkEvent]) -> Void
    /// One datagram: the kernel's notifications are far smaller, a dump's parts at most a page
    /// or two (a longer datagram is cut and its last message dropped).
    private var buffer = [UInt8](repeating: 0, count: 32 * 1024)
    /// Datagrams read in one turn before the loop serves others (the rest wait for the next).
    static let datagramsPerTurn = 64

    /// Opens the socket on `loop`; `onEvents` gets what each datagram said.
    init(loop: EventLoop, onEvents: @escaping ([NetworkEvent]) -> Void) throws(SystemError) {
        socket = try RouteNetlinkSocket()
        self.loop = loop
        self.onEvents = onEvents
        do {
            try socket.send(RouteNetlinkParser.addressDumpRequest(sequence: 1))
            try loop.register(socket.fd, events: EpollEvents.readable, handler: self)
        } catch {
            socket.close()
            throw error
        }
    }

    func handleEvents(_ events: UInt32) {
        for _ in 0..<Self.datagramsPerTurn {
            let received: RouteNetlinkSocket.Received
            do {
                received = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in
                    try socket.receive(into: raw)
                }
            } catch {
                // Nothing a read of a netlink socket fails with is worth stopping for: the next
                // notification comes as ever.
                return
            }
            switch received {
            case .wouldBlock: return
            case .overrun: onEvents([.lost])
            case .datagram(let count):
                let events = RouteNetlinkParser.events(in: buffer[0..<min(count, buffer.count)])
                if !events.isEmpty { onEvents(events) }
            }
        }
        // Level-triggered epoll brings the rest next turn.
    }

    func close() {
        loop.unregister(socket.fd)
        socket.close()
    }
}

@available(*, unavailable)
extension NetworkWatcher: Sendable {}
