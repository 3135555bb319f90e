import Foundation
import Glibc
import HTTPDNSSystem

/// The real daemon under `systemd-socket-activate`, with a NOTIFY_SOCKET this test reads.
public final class DaemonHarness {
    public let directory: TemporaryDirectory
    public let socketPath: String
    public let notify: NotifyListener
    public let process: ChildProcess
    public let stateDirectory: String
    public let stderrPath: String

    /// Starts `systemd-socket-activate -l SOCKET httpdnsd --config CONFIG --state-dir DIR`.
    /// The daemon itself starts on the first connection, as under systemd. `socketName` names the
    /// socket in `directory`; `launcher`, when given, is a command that runs the rest (e.g. in a
    /// private mount namespace) and must end by exec'ing its arguments.
    public init(
        config: String = "", environment: [String: String] = [:], extraArguments: [String] = [],
        directory: TemporaryDirectory = TemporaryDirectory(), socketName: String = "d.sock", launcher: [String] = []
    ) throws {
        _ = BrokenPipes.ignored
        self.directory = directory
        socketPath = directory.file(socketName)
        stateDirectory = directory.file("state")
        stderrPath = directory.file("stderr.log")
        let configPath = directory.file("httpdnsd.conf")
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        notify = try NotifyListener(path: directory.file("notify.sock"))
        // A previous harness on the same directory (a restart) may have left its socket file.
        unlink(socketPath)

        var arguments = ["-l", socketPath, "-E", "NOTIFY_SOCKET=\(notify.path)", "-E", "SWIFT_BACKTRACE=enable=no"]
        // systemd-socket-activate passes on only what -E names: a sanitized daemon reports where the test run says.
        for name in SanitizerOptions.names where SanitizerOptions.current[name] != nil { arguments += ["-E", name] }
        for (key, value) in environment { arguments += ["-E", "\(key)=\(value)"] }
        arguments += [BuiltProducts.path("httpdnsd"), "--config", configPath, "--state-dir", stateDirectory]
        arguments += extraArguments
        let command = launcher + ["/usr/bin/systemd-socket-activate"] + arguments
        process = try ChildProcess(command[0], Array(command.dropFirst()), stdout: stderrPath, stderr: stderrPath)
        // systemd-socket-activate binds before it waits; wait for the path to appear.
        _ = eventually(10) { Files.exists(socketPath) || !process.isRunning }
    }

    /// A fresh connection (which starts the daemon on first use). The socket path appears at
    /// bind(), a moment before systemd-socket-activate listens: refused connects are retried.
    public func connect(timeout: Double = 10) throws -> LineClient {
        var refused: SystemError?
        var client: LineClient?
        _ = try eventually(timeout) {
            do {
                client = try LineClient(path: socketPath)
                return true
            } catch let error as SystemError where error.errno == .connectionRefused && process.isRunning {
                refused = error
                return false
            }
        }
        guard let client else { throw refused ?? HarnessError("cannot connect to \(socketPath)") }
        return client
    }

    /// Connects and waits for READY=1.
    public func connectReady(timeout: Double = 20) throws -> LineClient {
        let client = try connect()
        guard notify.waitFor("READY=1", timeout: timeout) else {
            throw HarnessError("the daemon never sent READY=1; its log: \(log)")
        }
        return client
    }

    public var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { process.signal(number) }

    /// Sends SIGHUP and waits until the `count`th reload since the start has finished: its
    /// RELOADING=1, then a READY=1 after it, on the notify socket.
    public func reload(count: Int) -> Bool {
        signal(SIGHUP)
        return eventually(20, every: 10) {
            let messages = notify.received
            guard
                let reloading = messages.indices.filter({ messages[$0].contains("RELOADING=1") }).dropFirst(count - 1)
                    .first
            else { return false }
            return messages[(reloading + 1)...].contains { $0.split(separator: "\n").contains("READY=1") }
        }
    }

    /// Waits for exit and returns the status (nil on timeout).
    public func waitForExit(timeout: Double = 15) -> Int32? { process.wait(timeout: timeout) }

    public func stop() {
        if process.isRunning {
            signal(SIGTERM)
            if waitForExit(timeout: 10) == nil {
                signal(SIGKILL)
                _ = waitForExit(timeout: 5)
            }
        }
    }

    deinit { stop() }
}

/// A stand-in for systemd's socket units: it holds the listening socket and starts the daemon
/// (with LISTEN_FDS=1 and the socket as fd 3) whenever a connection waits and no daemon runs,
/// so tests can watch idle exit followed by activation on the next connection.
public final class SocketActivator: @unchecked Sendable {
    // @unchecked: `children` and `running` are only touched under `lock`.
    public let socketPath: String
    public let notify: NotifyListener
    private let listener: FileDescriptor
    private let arguments: [String]
    private let logPath: String
    private let lock = NSLock()
    private var children: [ChildProcess] = []
    private var running = true
    private var watcher: pthread_t?

    public init(directory: TemporaryDirectory, config: String) throws {
        _ = BrokenPipes.ignored
        socketPath = directory.file("a.sock")
        logPath = directory.file("activator.log")
        let configPath = directory.file("activated.conf")
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        notify = try NotifyListener(path: directory.file("a-notify.sock"))
        unlink(socketPath)
        listener = try UnixSocket.listen(path: socketPath)
        try listener.setNonBlocking(false)
        arguments = [
            "-c", #"LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@""#, BuiltProducts.path("httpdnsd"), "--config", configPath,
            "--state-dir", directory.file("state"),
        ]
        let thread = spawnThread(joinable: true) { [self] in self.watch() }
        lock.withLock { watcher = thread }
    }

    /// Daemons started so far.
    public var activations: Int { lock.withLock { children.count } }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Whether the latest daemon is running (nil before the first activation).
    public var latestIsRunning: Bool? { lock.withLock { children.last?.isRunning } }

    /// Sends `number` to the latest daemon (a restart, as `systemctl restart` would do).
    public func signalLatest(_ number: Int32) {
        lock.withLock { children.last }?.signal(number)
    }

    /// The latest daemon's exit status, waiting up to `timeout` seconds.
    public func waitForLatestExit(timeout: Double) -> Int32? {
        guard let child = lock.withLock({ children.last }) else { return nil }
        return child.wait(timeout: timeout)
    }

    private func watch() {
        while lock.withLock({ running }) {
            var pfd = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 20) > 0 else { continue }
            let busy = lock.withLock { children.last?.isRunning ?? false }
            if busy {
                usleep(10_000)
                continue
            }
            guard
                let child = try? ChildProcess(
                    "/bin/sh", arguments,
                    environment: [
                        "NOTIFY_SOCKET": notify.path, "SWIFT_BACKTRACE": "enable=no", "PATH": "/usr/bin:/bin",
                    ],
                    stdout: logPath, stderr: logPath, inheriting: listener.rawValue, as: 3)
            else { return }
            lock.withLock { children.append(child) }
        }
    }

    /// Stops the daemon and the watcher, then closes the socket. Idempotent: a second close of
    /// the descriptor could hit another test's file that reused its number.
    public func stop() {
        let thread: pthread_t? = lock.withLock {
            guard running else { return nil }
            running = false
            return watcher
        }
        guard let thread else { return }
        pthread_join(thread, nil)
        for child in lock.withLock({ children }) where child.isRunning {
            child.signal(SIGTERM)
            _ = child.wait(timeout: 10)
        }
        listener.close()
    }

    deinit { stop() }
}
