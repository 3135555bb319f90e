import CHTTPDNSShims
import Foundation
import Glibc
import HTTPDNSSystem
import Synchronization

/// A network namespace of its own (`unshare --net`, root only) with only its loopback, up: what
/// a test changes there (addresses, routes) never touches the machine's network, and nothing in
/// it can reach beyond it. A holder process keeps it alive until `stop()` or release.
public final class NetworkNamespace: Sendable {
    private let holder: ChildProcess

    /// Creates the namespace; throws when this process may not (not root, or no unshare).
    public init(directory: TemporaryDirectory) throws {
        let log = directory.file("netns.log")
        // The holder does nothing but keep the namespace (its death ends it); it is killed at stop().
        holder = try ChildProcess(
            "/usr/bin/unshare",
            ["--net", "/bin/sh", "-c", "ip link set lo up && echo up && exec sleep infinity"], stdout: log,
            stderr: log)
        guard
            eventually(
                10,
                {
                    (try? String(contentsOfFile: log, encoding: .utf8))?.contains("up") == true || !holder.isRunning
                }), holder.isRunning
        else {
            throw HarnessError(
                "cannot create a network namespace: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    /// The namespace as /proc names it.
    public var path: String { "/proc/\(holder.pid)/ns/net" }

    /// The command prefix that runs a program inside (a `DaemonHarness` launcher).
    public var launcher: [String] { ["/usr/bin/nsenter", "--net=\(path)", "--"] }

    /// Runs `command` inside and waits for it.
    public func run(_ command: [String]) throws -> CommandResult {
        try runCommand(launcher[0], Array(launcher.dropFirst()) + command, timeout: 30)
    }

    /// Runs `body` on a thread of its own that joined the namespace, so the sockets it creates
    /// (a fake upstream's listener) live there; the caller's threads stay where they are.
    public func inside<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HarnessError("cannot open \(path): \(Errno.current)") }
        defer { close(fd) }
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let thread = spawnThread(joinable: true) {
            let result: Result<T, any Error>
            if chttpdns_enter_network_namespace(fd) != 0 {
                result = .failure(HarnessError("setns \(self.path): \(Errno.current)"))
            } else {
                result = Result { try body() }
            }
            outcome.withLock { $0 = result }
        }
        pthread_join(thread, nil)
        guard let result = outcome.withLock({ $0 }) else { throw HarnessError("the namespace thread left nothing") }
        return try result.get()
    }

    public func stop() {
        guard holder.isRunning else { return }
        holder.signal(SIGKILL)
        _ = holder.wait(timeout: 10)
    }

    deinit { stop() }
}
