import CHTTPDNSShims
import Glibc

/// A signalfd for a program with its own poll loop (not the daemon's `EventLoop`): the signals
/// are blocked in the calling thread (call it before starting threads, so they inherit the mask)
/// and read from the descriptor instead.
public struct SignalDescriptor: Sendable {
    public let fd: FileDescriptor

    public init(signals: [Int32]) throws(SystemError) {
        let raw = try signals.withUnsafeBufferPointer { buffer throws(SystemError) in
            try syscall("signalfd") { chttpdns_signalfd(buffer.baseAddress, Int32(buffer.count)) }
        }
        fd = FileDescriptor(rawValue: raw)
    }

    /// The next pending signal's number, nil when none is pending.
    public func next() -> Int32? {
        let signal = chttpdns_signalfd_read(fd.rawValue)
        return signal > 0 ? signal : nil
    }
}
