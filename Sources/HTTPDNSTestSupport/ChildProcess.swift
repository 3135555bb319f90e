import Foundation
import Glibc
import HTTPDNSSystem

/// A child process for tests, the one way every suite runs a program: started with
/// posix_spawn(3), its standard streams on files (never pipes, which a grandchild could hold
/// open and stall the reader), reaped with waitpid(2). Foundation's `Process` was seen to report
/// exits late here.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `exitStatus` is only read and written under `lock`. A SocketActivator's watcher
    // thread polls its children while the test waits for one: the waitpid that reaps and the status
    // it leaves must be one step, or the other thread finds the child gone (ECHILD) yet "running".
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// How many times a start that fails with ETXTBSY is tried again, 10 ms apart.
    static let textBusyRetries = 50

    /// Starts `executable` (a path) with `arguments`, `environment` (this process's when nil)
    /// and its standard streams opened on the given paths (output appended). `inherited`, when
    /// given, is passed on as descriptor `target`.
    ///
    /// A program that was just written (a test builds it, then runs it) can fail to start with
    /// ETXTBSY while a child forked by another thread of this process still holds the writer's
    /// descriptor; that child lets go of it at its own exec, so the start is tried again.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: String = "/dev/null", stdout: String, stderr: String, inheriting inherited: Int32? = nil,
        as target: Int32 = 3
    ) throws {
        _ = BrokenPipes.ignored
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy, so the child keeps it as `target`.
        if let inherited { posix_spawn_file_actions_adddup2(&actions, inherited, target) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        // An explicit environment still carries the sanitizers' options, so a sanitized child reports like its parent.
        let variables = environment.map { SanitizerOptions.current.merging($0) { _, given in given } }
        let env = (variables ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var rc = posix_spawn(&pid, executable, &actions, nil, &argv, &envp)
        for _ in 0..<Self.textBusyRetries where rc == ETXTBSY {
            usleep(10_000)
            rc = posix_spawn(&pid, executable, &actions, nil, &argv, &envp)
        }
        guard rc == 0 else { throw HarnessError("cannot run \(executable): \(Errno(rawValue: rc))") }
        self.pid = pid
    }

    public var isRunning: Bool { poll() == nil }

    /// Sends `number` unless the child was already reaped.
    public func signal(_ number: Int32) {
        // Under the lock: once reaped, the pid may belong to another process.
        lock.withLock {
            if exitStatus == nil { kill(pid, number) }
        }
    }

    /// The exit status (128 + signal for a signal death), or nil while it runs.
    private func poll() -> Int32? {
        lock.withLock {
            if let exitStatus { return exitStatus }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            exitStatus = code
            return code
        }
    }

    /// Waits up to `timeout` seconds for the child to exit; its status, or nil if it still runs.
    public func wait(timeout: Double) -> Int32? {
        var status: Int32?
        _ = eventually(timeout, every: 2) {
            status = poll()
            return status != nil
        }
        return status
    }

    deinit {
        if poll() == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }
}

/// What a program run to completion printed, and how it ended.
public struct CommandResult: Sendable {
    /// The exit status (128 + signal for a signal death; 137 when it was killed at the timeout).
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs `executable` to completion (see `ChildProcess`) with `stdin` as its standard input and
/// returns what it wrote. A program still running after `timeout` seconds is killed.
public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil,
    timeout: Double = 30
) throws -> CommandResult {
    _ = BrokenPipes.ignored
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

/// Gives a program a test has just linked its execute bits (0755). The umask is one per
/// process: `UnixSocket` narrows it around `bind` while other tests start in-process servers,
/// and a compiler spawned at that moment inherits it and writes a program that nobody may run
/// ("Permission denied" from exec, even as root).
public func makeExecutable(_ path: String) throws {
    guard chmod(path, 0o755) == 0 else { throw HarnessError("chmod \(path): \(Errno.current)") }
}
