import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// Follows the daemon's change stream (`monitor`) on a thread of its own, and makes `readable`
/// readable whenever the caller's jar may have changed: a cookie stored or deleted for this
/// uid, a "dropped" event (some events were lost), or a lost subscription (opened again a
/// second later). Events carry no values, so the reader reads the jar with `listCookies`.
final class JarChangeWatcher: Sendable {
    /// Poll this; `drain()` once it is readable.
    let readable: FileDescriptor
    private let writable: FileDescriptor
    private let socketPath: String

    init(socketPath: String) throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        _ = try syscall("pipe") { pipe(&ends) }
        readable = FileDescriptor(rawValue: ends[0])
        writable = FileDescriptor(rawValue: ends[1])
        for end in [readable, writable] {
            try end.setCloseOnExec()
            try end.setNonBlocking()
        }
        self.socketPath = socketPath
    }

    /// Opens the subscription and waits until the daemon confirmed it, so that no change after
    /// this returns is missed; then follows it on a thread of its own (a connection belongs to
    /// one thread, so that thread opens it).
    func start() throws(ClientError) {
        let outcome = SubscribeOutcome()
        spawnThread(named: "jar-monitor") { [self] in
            let connection = HTTPDNSConnection(socketPath: socketPath)
            let refused = subscribe(connection)
            outcome.set(refused)
            if refused == nil { followForever(connection) }
        }
        if let refused = outcome.wait() { throw refused }
    }

    /// Empties the pipe.
    func drain() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while readSome(into: &bytes) {}
    }

    /// Whether a read from the pipe returned bytes.
    private func readSome(into bytes: inout [UInt8]) -> Bool {
        let outcome = bytes.withUnsafeMutableBytes { raw in try? readable.read(into: raw) }
        guard case .done(let count)? = outcome else { return false }
        return count > 0
    }

    /// Subscribes `connection` to the change stream; the error when that failed.
    private func subscribe(_ connection: HTTPDNSConnection) -> ClientError? {
        do {
            _ = try connection.subscribe(Method.monitor.rawValue)
            return nil
        } catch {
            return error
        }
    }

    /// Follows `first`, then each subscription opened again after one was lost. Two loops, not one:
    /// Swift 6.3's optimizer does not finish on one endless loop that both follows and subscribes.
    private func followForever(_ first: HTTPDNSConnection) {
        var connection = first
        while true {
            follow(connection)
            connection = subscribeAgain()
        }
    }

    /// After a lost subscription (whatever happened meanwhile is read again in full): says
    /// "changed", and subscribes again a second later, until that works.
    private func subscribeAgain() -> HTTPDNSConnection {
        while true {
            signalChange()
            sleep(1)
            let again = HTTPDNSConnection(socketPath: socketPath)
            if subscribe(again) == nil { return again }
        }
    }

    private func follow(_ connection: HTTPDNSConnection) {
        let uid = Int64(getuid())
        while let (method, params) = try? connection.nextNotification() {
            guard method == MonitorResult.eventMethod else { continue }
            switch params["type"]?.stringValue {
            case "cookie":
                // root sees every user's events; only this uid's jar matters here.
                guard params["action"]?.stringValue != "rejected",
                    params["uid"]?.numberValue?.int64Value ?? uid == uid
                else { continue }
                signalChange()
            case "dropped":
                signalChange()
            default:
                continue
            }
        }
    }

    private func signalChange() {
        // A full pipe already says "changed".
        _ = [UInt8(1)].withUnsafeBytes { raw in try? writable.write(raw) }
    }
}

/// How the thread's first subscription went, handed to the thread that waits for it.
private final class SubscribeOutcome: @unchecked Sendable {
    private let lock = ConditionLock()
    // Under `lock`.
    private var answered = false
    private var failure: ClientError?

    func set(_ refused: ClientError?) {
        lock.withLock {
            answered = true
            failure = refused
            lock.signal()
        }
    }

    func wait() -> ClientError? {
        lock.withLock {
            while !answered { lock.wait() }
            return failure
        }
    }
}
