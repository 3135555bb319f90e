import CHTTPDNSShims
import Glibc

private let sysPipe = Glibc.pipe
private let sysWaitpid = Glibc.waitpid
private let sysKill = Glibc.kill

/// A child program bound to this process's life (a browser on `--remote-debugging-pipe`): it
/// reads `input` as its fd 3 and writes `output` as its fd 4, runs in a process group of its own,
/// and is killed by the kernel when the thread that started it ends.
public struct TiedChild: Sendable {
    public let pid: pid_t
    /// What this process writes for the child to read (the child's fd 3).
    public let input: FileDescriptor
    /// What this process reads from the child (the child's fd 4).
    public let output: FileDescriptor

    /// Starts `path` (absolute) with `arguments` (argv[1...]) and `environment` ("NAME=value").
    /// Both pipe ends kept here are close-on-exec and non-blocking.
    public static func spawn(_ path: String, _ arguments: [String], environment: [String]) throws(SystemError)
        -> TiedChild
    {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        _ = try syscall("pipe") { sysPipe(&toChild) }
        do {
            _ = try syscall("pipe") { sysPipe(&fromChild) }
            // Close-on-exec at once: another thread's child must not inherit the browser's pipes.
            for fd in toChild + fromChild { try FileDescriptor(rawValue: fd).setCloseOnExec() }
        } catch {
            for fd in toChild + fromChild where fd >= 0 { FileDescriptor(rawValue: fd).close() }
            throw error
        }
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        let pid = chttpdns_spawn_tied(path, &argv, &envp, toChild[0], fromChild[1])
        let code = Errno.current
        FileDescriptor(rawValue: toChild[0]).close()
        FileDescriptor(rawValue: fromChild[1]).close()
        let input = FileDescriptor(rawValue: toChild[1])
        let output = FileDescriptor(rawValue: fromChild[0])
        guard pid > 0 else {
            input.close()
            output.close()
            throw SystemError(errno: code, call: "execve \(path)")
        }
        try input.setNonBlocking()
        try output.setNonBlocking()
        return TiedChild(pid: pid, input: input, output: output)
    }

    /// Sends `signal` to the child's whole process group (its own helpers too).
    public func signalGroup(_ signal: Int32) {
        _ = sysKill(-pid, signal)
    }

    /// Whether the child ends within `milliseconds` (polled; it is reaped then).
    public func exits(within milliseconds: Int64) -> Bool {
        let deadline = MonotonicClock.nowMilliseconds() + milliseconds
        while !hasExited() {
            guard MonotonicClock.nowMilliseconds() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }

    /// Whether the child ended; it is reaped then (WNOHANG).
    public func hasExited() -> Bool {
        var status: Int32 = 0
        let result = sysWaitpid(pid, &status, WNOHANG)
        return result == pid || (result < 0 && Errno.current == Errno(rawValue: ECHILD))
    }
}

extension ProcessEnvironment {
    /// Every `NAME=value` of this process's environment, for a child's.
    public static var all: [String] {
        var entries: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            entries.append(String(cString: entry))
            cursor += 1
        }
        return entries
    }
}
