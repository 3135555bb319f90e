import Foundation
import Glibc
import HTTPDNSSystem

/// Debian's `redis-server` for tests: listens on a Unix socket in a private temporary directory
/// and, when asked, on a free 127.0.0.1 port; no persistence unless the test saves (`SAVE`)
/// itself. Killed when the value goes away. `restart()` starts it again on the same socket,
/// port and directory, so a saved dump.rdb is loaded back.
public final class RedisServer: @unchecked Sendable {
    // @unchecked: `process` is replaced only by the test thread that owns the server.
    public static let executable = "/usr/bin/redis-server"

    public let directory: TemporaryDirectory
    public let socketPath: String
    /// The TCP port on 127.0.0.1, when the server listens on TCP.
    public let port: UInt16?
    public let password: String?
    private let extraArguments: [String]
    private var process: ChildProcess?

    /// Starts the server and waits until it logs that it accepts connections.
    /// `arguments` are extra `--name value` configuration pairs (`["--maxmemory", "1mb"]`).
    public init(tcp: Bool = false, password: String? = nil, arguments: [String] = []) throws {
        directory = TemporaryDirectory(prefix: "redis")
        socketPath = directory.file("redis.sock")
        if tcp {
            // The kernel picks a free port; it is released just before Redis binds it.
            let (listener, chosen) = try TCPSocket.listenLoopback()
            listener.close()
            port = chosen
        } else {
            port = nil
        }
        self.password = password
        extraArguments = arguments
        try start()
    }

    deinit { kill() }

    /// Whether Debian's redis-server is installed (`.ci/install-deps` installs it).
    public static var isInstalled: Bool { access(executable, X_OK) == 0 }

    public var logPath: String { directory.file("redis.log") }

    /// The running server's process id (to stop it with SIGSTOP, for example).
    public var pid: pid_t? { process?.pid }

    /// Starts the server (again) and waits for its "ready to accept connections" log line.
    public func start() throws {
        var arguments = [
            "--port", String(port ?? 0), "--bind", "127.0.0.1", "--unixsocket", socketPath, "--unixsocketperm", "700",
            "--dir", directory.path, "--logfile", logPath, "--daemonize", "no", "--save", "", "--appendonly", "no",
            "--dbfilename", "dump.rdb",
        ]
        if let password { arguments += ["--requirepass", password] }
        arguments += extraArguments
        // A fresh log per start: readiness is its first "Ready" line.
        unlink(logPath)
        let child = try ChildProcess(
            Self.executable, arguments, stdout: directory.file("stdout"), stderr: directory.file("stderr"))
        process = child
        // Every listener is bound before the first "Ready" line (one per listener in Redis 7).
        guard eventually(15, { isReady() || !child.isRunning }) else {
            throw HarnessError("redis-server did not become ready within 15 s")
        }
        if !isReady() {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw HarnessError("redis-server exited at start:\n\(log.suffix(2000))")
        }
    }

    /// SIGKILL, as a crash or an OOM kill would end it; waits until it is gone.
    public func kill() {
        guard let process else { return }
        process.signal(SIGKILL)
        _ = process.wait(timeout: 10)
        self.process = nil
    }

    /// Kills the server and starts it again with the same socket, port and directory.
    public func restart() throws {
        kill()
        try start()
    }

    /// Deletes the saved dataset, so the next start is empty.
    public func removeSavedData() {
        unlink(directory.file("dump.rdb"))
    }

    private func isReady() -> Bool {
        guard let log = try? String(contentsOfFile: logPath, encoding: .utf8) else { return false }
        // "Ready to accept connections tcp", or "The server is now ready to accept connections at
        // PATH" when only the Unix socket listens.
        return log.lowercased().contains("ready to accept connections")
    }
}
