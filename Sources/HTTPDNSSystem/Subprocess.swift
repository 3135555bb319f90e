import Glibc

private let sysPipe = Glibc.pipe
private let sysWaitpid = Glibc.waitpid

/// A child program started with posix_spawnp(3), for a tool that runs another program in its
/// place (httpdnsctl running curl): standard input and output are shared with this process,
/// standard error may go through a pipe this process reads.
public struct Subprocess {
    /// How a child ended.
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signaled(Int32)
    }

    public let pid: pid_t
    /// The read end of the child's standard error when `captureStandardError` was set.
    public let standardError: FileDescriptor?

    /// Starts `program` (looked up in `PATH` when it has no `/`) with `arguments` (argv[1...]) and
    /// this process's environment. `standardInput` replaces fd 0 when given. Signals that this
    /// process ignores (SIGINT, SIGQUIT, SIGPIPE) are reset to their defaults in the child.
    public static func spawn(
        _ program: String, _ arguments: [String], standardInput: FileDescriptor? = nil,
        captureStandardError: Bool = false
    ) throws(SystemError) -> Subprocess {
        var pipeEnds: [Int32] = [-1, -1]
        if captureStandardError {
            _ = try syscall("pipe") { sysPipe(&pipeEnds) }
            try FileDescriptor(rawValue: pipeEnds[0]).setCloseOnExec()
            try FileDescriptor(rawValue: pipeEnds[1]).setCloseOnExec()
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy.
        if let standardInput { posix_spawn_file_actions_adddup2(&actions, standardInput.rawValue, 0) }
        if captureStandardError { posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGQUIT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        var argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, program, &actions, &attributes, &argv, environ)
        if captureStandardError { FileDescriptor(rawValue: pipeEnds[1]).close() }
        guard rc == 0 else {
            if captureStandardError { FileDescriptor(rawValue: pipeEnds[0]).close() }
            throw SystemError(errno: Errno(rawValue: rc), call: "posix_spawnp \(program)")
        }
        return Subprocess(pid: pid, standardError: captureStandardError ? FileDescriptor(rawValue: pipeEnds[0]) : nil)
    }

    /// Waits for the child to end (it is reaped).
    public func wait() throws(SystemError) -> Termination {
        var status: Int32 = 0
        _ = try syscall("waitpid") { sysWaitpid(pid, &status, 0) }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }
}
