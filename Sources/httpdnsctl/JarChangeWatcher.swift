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
        let confirmed = ConditionLock()
        // Written by the thread and read here, both under `confirmed`.
        nonisolated(unsafe) var outcome: Result<Void, ClientError>?
        spawnThread(named: "jar-monitor") { [self] in
            let connection = HTTPDNSConnection(socketPath: socketPath)
            let subscribed = Result { () throws(ClientError) in _ = try connection.subscribe(Method.monitor.rawValue) }
            confirmed.withLock {
                outcome = subscribed
                confirmed.signal()
            }
            guard case .success = subscribed else { return }
            follow(connection)
            while true {
                // Lost: whatever happened meanwhile is read again in full.
                signalChange()
                sleep(1)
                let again = HTTPDNSConnection(socketPath: socketPath)
                if (try? again.subscribe(Method.monitor.rawValue)) != nil { follow(again) }
            }
        }
        let result = confirmed.withLock {
            while outcome == nil { confirmed.wait() }
            return outcome!
        }
        try result.get()
    }

    /// Empties the pipe.
    func drain() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while case .success(.done(let count)) = bytes.withUnsafeMutableBytes({ raw in
            Result { () throws(SystemError) in try readable.read(into: raw) }
        }), count > 0 {}
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
