import CHiredis
import Glibc

/// One blocking connection to a Redis server, through hiredis.
///
/// Every call blocks the calling thread for at most the connect or command timeout, so a
/// connection belongs to a thread of its own (never the event loop's). It is not thread-safe.
/// It connects on first use and after any failure that dropped the connection, so a caller
/// only has to decide when to try again (with backoff); a command is never retried here,
/// since not every command is safe to repeat.
public final class RedisConnection {
    public let options: RedisOptions
    private var context: UnsafeMutablePointer<redisContext>?
    /// SHA1 digests of the scripts loaded on this connection's server, by source text.
    private var scriptDigests: [String: String] = [:]

    /// Does not connect yet: the first command (or `connect()`) does.
    public init(options: RedisOptions) {
        self.options = options
    }

    deinit { disconnect() }

    /// Whether a connection is open (it may still turn out dead on the next command).
    public var isConnected: Bool { context != nil }

    /// Opens a new connection (closing any open one), then `AUTH` and `SELECT`.
    public func connect() throws(RedisError) {
        disconnect()
        let timeout = Self.timeval(milliseconds: options.connectTimeoutMilliseconds)
        let opened: UnsafeMutablePointer<redisContext>?
        switch options.endpoint {
        case .tcp(let host, let port): opened = redisConnectWithTimeout(host, Int32(port), timeout)
        case .unix(let path): opened = redisConnectUnixWithTimeout(path, timeout)
        }
        let savedErrno = errno
        guard let opened else { throw RedisError(.connectionFailed, "\(options.endpoint): out of memory") }
        if opened.pointee.err != 0 {
            let error = failure(of: opened, errno: savedErrno, connecting: true)
            redisFree(opened)
            throw error
        }
        redisSetTimeout(opened, Self.timeval(milliseconds: options.commandTimeoutMilliseconds))
        context = opened
        do {
            if let password = options.password { try authenticate(password) }
            if options.database != 0 {
                _ = try command(["SELECT", RedisArgument(options.database)])
            }
        } catch {
            disconnect()
            throw error
        }
    }

    /// Closes the connection, if open.
    public func disconnect() {
        if let context { redisFree(context) }
        context = nil
    }

    // MARK: commands

    /// Sends one command and waits for its reply, connecting first if needed. An error reply
    /// is thrown; an I/O failure also closes the connection.
    public func command(_ arguments: [RedisArgument]) throws(RedisError) -> RedisReply {
        let context = try openContext()
        let raw = Self.withArgv(arguments) { argc, argv, lengths in redisCommandArgv(context, argc, argv, lengths) }
        let savedErrno = errno
        guard let raw else { throw dropConnection(errno: savedErrno) }
        defer { freeReplyObject(raw) }
        let reply = RedisReply(raw.assumingMemoryBound(to: redisReply.self))
        if case .error(let text) = reply {
            let error = replyError(text)
            // NOAUTH and friends: reconnecting (with AUTH) is the only way forward.
            if error.code == .authenticationFailed { disconnect() }
            throw error
        }
        return reply
    }

    /// Sends several commands at once and waits for all replies, in order: one round trip.
    /// Error replies come back as `.error` elements; an I/O failure throws (and closes).
    public func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        let context = try openContext()
        for arguments in commands {
            let rc = Self.withArgv(arguments) { argc, argv, lengths in
                redisAppendCommandArgv(context, argc, argv, lengths)
            }
            guard rc == REDIS_OK else { throw dropConnection(errno: errno) }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            let rc = redisGetReply(context, &raw)
            let savedErrno = errno
            guard rc == REDIS_OK, let raw else { throw dropConnection(errno: savedErrno) }
            replies.append(RedisReply(raw.assumingMemoryBound(to: redisReply.self)))
            freeReplyObject(raw)
        }
        return replies
    }

    /// `pipeline`, throwing the first error reply (for batches that must all succeed).
    public func pipelineThrowingErrors(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        let replies = try pipeline(commands)
        for reply in replies {
            if case .error(let text) = reply { throw replyError(text) }
        }
        return replies
    }

    /// Runs a Lua script by its digest (`EVALSHA`), loading it first when the server does not
    /// know it (a new connection, a restarted server, `SCRIPT FLUSH`).
    public func evaluate(_ script: RedisScript, keys: [RedisArgument], arguments: [RedisArgument])
        throws(RedisError) -> RedisReply
    {
        let tail = [RedisArgument(keys.count)] + keys + arguments
        if let digest = scriptDigests[script.source] {
            do {
                return try command(["EVALSHA", RedisArgument(digest)] + tail)
            } catch  where error.serverReply?.hasPrefix("NOSCRIPT") == true {
                scriptDigests[script.source] = nil
            }
        }
        guard let digest = try command(["SCRIPT", "LOAD", RedisArgument(script.source)]).text else {
            throw RedisError(.unexpectedReply, "\(options.endpoint): SCRIPT LOAD returned no digest")
        }
        scriptDigests[script.source] = digest
        return try command(["EVALSHA", RedisArgument(digest)] + tail)
    }

    // MARK: internals

    private func openContext() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        // hiredis writes with write(2): a server that went away must be EPIPE, not a SIGPIPE that
        // kills the process. The mask is per thread, and the connection may move between threads.
        _ = chiredis_block_sigpipe()
        if context == nil { try connect() }
        return context!
    }

    /// `AUTH`, with a fixed message on failure: the server's reply is not repeated, so nothing
    /// about the password can reach a log through it.
    private func authenticate(_ password: RedisPassword) throws(RedisError) {
        do {
            _ = try command(["AUTH", RedisArgument(password.bytes)])
        } catch  where error.serverReply != nil {
            let reply = error.serverReply ?? ""
            let noPasswordSet =
                reply.contains("without any password configured") || reply.contains("no password is set")
            throw RedisError(
                .authenticationFailed,
                noPasswordSet
                    ? "\(options.endpoint): AUTH refused: the server has no password set"
                    : "\(options.endpoint): AUTH failed: wrong password")
        }
    }

    private func replyError(_ text: String) -> RedisError {
        RedisError(errorReply: text, from: options.endpoint)
    }

    /// The error of a call that returned nothing; the connection is unusable after it (a late
    /// reply would answer the next command), so it is closed.
    private func dropConnection(errno savedErrno: Int32) -> RedisError {
        guard let context else { return RedisError(.connectionLost, "\(options.endpoint): not connected") }
        let error = failure(of: context, errno: savedErrno, connecting: false)
        disconnect()
        return error
    }

    private func failure(of context: UnsafeMutablePointer<redisContext>, errno savedErrno: Int32, connecting: Bool)
        -> RedisError
    {
        let text = withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let message = "\(options.endpoint): \(text.isEmpty ? "I/O error" : text)"
        switch context.pointee.err {
        case REDIS_ERR_EOF:
            return RedisError(connecting ? .connectionFailed : .connectionLost, message)
        case REDIS_ERR_PROTOCOL:
            return RedisError(.protocolError, message)
        case REDIS_ERR_IO:
            if savedErrno == EAGAIN || savedErrno == ETIMEDOUT || savedErrno == EINPROGRESS
                || text.contains("timed out") || text.contains("temporarily unavailable")
            {
                return RedisError(.timeout, message)
            }
            return RedisError(connecting ? .connectionFailed : .connectionLost, message)
        default:
            return RedisError(connecting ? .connectionFailed : .connectionLost, message)
        }
    }

    private static func timeval(milliseconds: Int) -> Glibc.timeval {
        Glibc.timeval(tv_sec: milliseconds / 1_000, tv_usec: (milliseconds % 1_000) * 1_000)
    }

    /// Lays the arguments out for hiredis's argv functions (binary-safe: lengths are passed),
    /// then wipes the copy, which may have held a password.
    private static func withArgv<R>(
        _ arguments: [RedisArgument],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R
    ) -> R {
        let total = arguments.reduce(0) { $0 + $1.bytes.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        defer {
            storage.initializeMemory(as: UInt8.self, repeating: 0)
            storage.deallocate()
        }
        var pointers: [UnsafePointer<CChar>?] = []
        var lengths: [Int] = []
        pointers.reserveCapacity(arguments.count)
        lengths.reserveCapacity(arguments.count)
        var offset = 0
        for argument in arguments {
            let destination = storage.baseAddress! + offset
            argument.bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { destination.copyMemory(from: base, byteCount: source.count) }
            }
            pointers.append(UnsafePointer(destination.assumingMemoryBound(to: CChar.self)))
            lengths.append(argument.bytes.count)
            offset += argument.bytes.count
        }
        return pointers.withUnsafeMutableBufferPointer { argv in
            lengths.withUnsafeBufferPointer { argvLengths in
                body(Int32(arguments.count), argv.baseAddress!, argvLengths.baseAddress!)
            }
        }
    }
}

@available(*, unavailable)
extension RedisConnection: Sendable {}

/// One argument of a command: binary-safe bytes.
public struct RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public init(_ text: String) { self.bytes = Array(text.utf8) }
    public init<I: BinaryInteger>(_ number: I) { self.bytes = Array(String(number).utf8) }
    public init(stringLiteral value: String) { self.init(value) }
}

/// A Lua script run with `EVALSHA` (see `RedisConnection.evaluate`).
public struct RedisScript: Sendable, Equatable {
    public let source: String
    public init(_ source: String) { self.source = source }
}
