import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// Where the package's built executables are: beside the test bundle that is running.
public enum BuiltProducts {
    public static var directory: String {
        if let override = ProcessInfo.processInfo.environment["HTTPDNS_BUILD_DIR"] { return override }
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // The XCTest runner lives inside the .xctest bundle on some layouts.
        while dir.hasSuffix(".xctest") || dir.hasSuffix("/Contents/MacOS") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }

    public static func path(_ name: String) -> String { directory + "/" + name }

    /// The package root (for ../shared and rpc-schema), found from this source file.
    public static var packageRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }
}

/// A scratch directory removed when the harness ends. Paths stay short: sun_path holds 107 bytes.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "hd") {
        do {
            path = try Files.makeTemporaryDirectory(prefix: prefix)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    public func file(_ name: String) -> String { path + "/" + name }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}

/// A NOTIFY_SOCKET the test owns: the daemon's sd_notify datagrams arrive here.
public final class NotifyListener: @unchecked Sendable {
    // @unchecked: `messages` is only touched under `lock`; the fd is read by one thread.
    public let path: String
    private let fd: FileDescriptor
    private let lock = NSLock()
    private var messages: [String] = []

    public init(path: String) throws {
        self.path = path
        fd = try UnixSocket.bindDatagram(path: path)
    }

    deinit { fd.close() }

    /// Every message received so far (each may hold several `KEY=VALUE` lines).
    public var received: [String] {
        drain()
        return lock.withLock { messages }
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(fd.rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT))
            }
            if n <= 0 { return }
            let text = String(decoding: buffer[0..<n], as: UTF8.self)
            lock.withLock { messages.append(text) }
        }
    }

    /// Waits until some message contains `line` (e.g. "READY=1"); true when it came in time.
    public func waitFor(_ line: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if received.contains(where: { $0.split(separator: "\n").contains(Substring(line)) }) { return true }
            var pfd = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, 20)
        }
        return false
    }

    /// Index of the first message holding `line`, for ordering checks.
    public func indexOf(_ line: String) -> Int? {
        received.firstIndex { $0.split(separator: "\n").contains(Substring(line)) }
    }
}

/// A line-oriented client over a real Unix socket, for speaking raw protocol bytes.
public final class LineClient {
    public let fd: FileDescriptor
    private var framer = LineFramer(maxLineLength: 64 << 20)
    private var lines: [String] = []
    public private(set) var reachedEOF = false

    public init(path: String) throws {
        fd = try UnixSocket.connect(path: path)
    }

    deinit { fd.close() }

    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd.rawValue, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError(errno: errno, call: "send")
            }
            offset += n
        }
    }

    /// Sends `line` plus a newline.
    public func sendLine(_ line: String) throws { try send(line + "\n") }

    public func shutdownWrite() { UnixSocket.shutdownWrite(fd) }

    /// The next line, or nil at EOF or after `timeout` seconds.
    public func readLine(timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while lines.isEmpty {
            if reachedEOF { return nil }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var pfd = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(max(1, remaining * 1000))) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { raw in recv(fd.rawValue, raw.baseAddress, raw.count, 0) }
            if n <= 0 {
                reachedEOF = true
                continue
            }
            framer.append(Array(buffer[0..<n]))
            framer.drain { event in
                if case .line(let line) = event { lines.append(String(decoding: line, as: UTF8.self)) }
            }
        }
        return lines.removeFirst()
    }

    /// The next line parsed as JSON.
    public func readJSON(timeout: Double = 10) -> JSON? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return try? JSONParser.parse(line)
    }

    /// Sends one request and returns the response with its id (other lines are kept for later).
    public func call(_ method: String, _ params: JSON = .object(JSONObject()), id: Int = 1) throws -> JSON? {
        let request: JSON = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        try sendLine(request.encodedString)
        return readJSON()
    }
}

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
        for (key, value) in environment { arguments += ["-E", "\(key)=\(value)"] }
        arguments += [BuiltProducts.path("httpdnsd"), "--config", configPath, "--state-dir", stateDirectory]
        arguments += extraArguments
        let command = launcher + ["/usr/bin/systemd-socket-activate"] + arguments
        process = try ChildProcess(command[0], Array(command.dropFirst()), stdout: stderrPath, stderr: stderrPath)
        // systemd-socket-activate binds before it waits; wait for the path to appear.
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socketPath) && Date() < deadline { usleep(5_000) }
    }

    /// A fresh connection (which starts the daemon on first use). The socket path appears at
    /// bind(), a moment before systemd-socket-activate listens: refused connects are retried.
    public func connect(timeout: Double = 10) throws -> LineClient {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                return try LineClient(path: socketPath)
            } catch let error as SystemError where error.errno == ECONNREFUSED && Date() < deadline && process.isRunning
            {
                usleep(5_000)
            }
        }
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

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a program to completion and captures its output.
public struct CommandResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil,
    timeout: Double = 30
) throws -> CommandResult {
    // Output goes to files, not pipes: nothing can hold a pipe open and stall the reader.
    let scratch = TemporaryDirectory(prefix: "cmd")
    let inPath = scratch.file("in")
    try (stdin ?? "").write(toFile: inPath, atomically: false, encoding: .utf8)
    let child = try ChildProcess(
        executable, arguments, environment: environment, stdin: inPath, stdout: scratch.file("out"),
        stderr: scratch.file("err"))
    let status =
        child.wait(timeout: timeout)
        ?? {
            child.signal(SIGKILL)
            return child.wait(timeout: 5) ?? 137
        }()
    let stdout = (try? String(contentsOfFile: scratch.file("out"), encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOfFile: scratch.file("err"), encoding: .utf8)) ?? ""
    return CommandResult(status: status, stdout: stdout, stderr: stderr)
}

/// A child process started with posix_spawn and reaped with waitpid (Foundation's Process
/// was seen to report exits late here).
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `exitStatus` is only read and written by the thread that waits.
    public let pid: pid_t
    private var exitStatus: Int32?

    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: String = "/dev/null", stdout: String, stderr: String, inheriting inherited: Int32? = nil,
        as target: Int32 = 3
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy, so the child keeps it as `target`.
        if let inherited { posix_spawn_file_actions_adddup2(&actions, inherited, target) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, &argv, &envp)
        guard rc == 0 else { throw HarnessError("cannot run \(executable): errno \(rc)") }
        self.pid = pid
    }

    public var isRunning: Bool { poll() == nil }

    public func signal(_ number: Int32) {
        if exitStatus == nil { kill(pid, number) }
    }

    /// The exit status (128 + signal for a signal death), or nil while it runs.
    private func poll() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        exitStatus = code
        return code
    }

    /// Waits up to `timeout` seconds; nil if it is still running.
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = poll() { return status }
            usleep(2_000)
        }
        return poll()
    }

    deinit {
        if poll() == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }
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
