import CHTTPDNSShims
import Glibc

/// Delivers signals to the event loop through a signalfd, so handlers run on the loop thread
/// like any other event (no async-signal-safety constraints).
public final class SignalSource: EventHandler {
    private let fd: FileDescriptor
    private let onSignal: (Int32) -> Void

    /// Blocks `signals` for this thread (call it before starting other threads so they inherit
    /// the mask) and registers the signalfd with `loop`.
    public init(loop: EventLoop, signals: [Int32], onSignal: @escaping (Int32) -> Void) throws(SystemError) {
        let raw = try signals.withUnsafeBufferPointer { buffer throws(SystemError) in
            try syscall("signalfd") { chttpdns_signalfd(buffer.baseAddress, Int32(buffer.count)) }
        }
        fd = FileDescriptor(rawValue: raw)
        self.onSignal = onSignal
        try loop.register(fd, events: EpollEvents.readable, handler: self)
    }

    /// Signals handled in one turn; level-triggered epoll brings the rest next turn.
    static let signalsPerTurn = 16

    public func handleEvents(_ events: UInt32) {
        for _ in 0..<Self.signalsPerTurn {
            let signal = chttpdns_signalfd_read(fd.rawValue)
            if signal <= 0 { return }
            onSignal(signal)
        }
    }

    /// SIGPIPE must never kill the daemon: a client closing mid-reply is an EPIPE, not a death.
    public static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
