import CHTTPDNSShims
import Glibc

/// A sleep another thread can cut short: background threads back off between retries with it,
/// and shutting down wakes them at once instead of waiting out the delay.
public final class WakeableSleep: Sendable {
    private let eventFD: FileDescriptor

    public init() throws(SystemError) {
        eventFD = FileDescriptor(
            rawValue: try syscall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) })
    }

    deinit { eventFD.close() }

    /// Sleeps up to `milliseconds`; true when `wake()` ended it early. A wake that came while
    /// nobody slept ends the next sleep at once (the wake is remembered, not lost).
    @discardableResult
    public func sleep(milliseconds: Int) -> Bool {
        let timeout = Int32(clamping: max(0, milliseconds))
        guard (try? eventFD.wait(for: .readable, timeoutMilliseconds: timeout)) == true else { return false }
        var counter: UInt64 = 0
        _ = Glibc.read(eventFD.rawValue, &counter, 8)
        return true
    }

    /// Ends the current (or next) `sleep`, from any thread.
    public func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(eventFD.rawValue, &one, 8)
    }
}
