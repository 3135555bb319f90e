import CHiredis
import Glibc
import HTTPDNSSystem

/// One blocking connection to a Redis server.
///
/// hiredis opens it (name resolution, connect with a timeout); the commands are written and
/// their replies read here, on the non-blocking socket, so that a whole exchange has a
/// deadline (`commandTimeoutMilliseconds` for all of it, not per read: a server that sends one
/// byte every few hundred milliseconds is as late as one that sends nothing) and a reply can
/// hold no more than `replyLimits` (`RESPReader`). Past either the connection is dropped.
///
/// Every call blocks the calling thread for at most the connect or command timeout, so a
/// connection belongs to a thread of its own (never the event loop's). It is not thread-safe.
/// It connects on first use and after any failure that dropped the connection, so a caller
/// only has to decide when to try again (with backoff); a command is never retried here,
/// since not every command is safe to repeat.
public final class RedisConnection {
    public let options: RedisOptions
    private var context: UnsafeMutablePointer<redisContext>?
    private var reader: RESPReader
    /// SHA1 digests of the scripts loaded on this connection's server, by source text.
    private var scriptDigests: [String: String] = [:]

    /// Does not connect yet: the first command (or `connect()`) does.
    public init(options: RedisOptions) {
        self.options = options
        reader = RESPReader(limits: options.replyLimits)
    }

    deinit { disconnect() }

    /// Whether a connection is open (it may still turn out dead on the next command).
    public var isConnected: Bool { context != nil }

    /// Opens a new connection (closing any open one), then `AUTH` and `SELECT`.
    public func connect() throws(RedisError) {
        disconnect()
        let hiredis: LibHiredis
        do {
            hiredis = try LibHiredis.shared()
        } catch {
            throw RedisError(.connectionFailed, "\(options.endpoint): \(error)")
        }
        let f = hiredis.functions
        let timeout = Self.timeval(milliseconds: options.connectTimeoutMilliseconds)
        let opened: UnsafeMutablePointer<redisContext>?
        switch options.endpoint {
        case .tcp(let host, let port): opened = f.pointee.redisConnectWithTimeout(host, Int32(port), timeout)
        case .unix(let path): opened = f.pointee.redisConnectUnixWithTimeout(path, timeout)
        }
        let savedErrno = errno
        guard let opened else { throw RedisError(.connectionFailed, "\(options.endpoint): out of memory") }
        if opened.pointee.err != 0 {
            let error = failure(of: opened, errno: savedErrno)
            f.pointee.redisFree(opened)
            throw error
        }
        do {
            try socket(of: opened).setNonBlocking()
        } catch {
            f.pointee.redisFree(opened)
            throw RedisError(.connectionFailed, "\(options.endpoint): \(error)")
        }
        context = opened
        reader.reset()
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
        // A context exists only once the library is loaded.
        if let context, let hiredis = try? LibHiredis.shared() { hiredis.functions.pointee.redisFree(context) }
        context = nil
        reader.reset()
    }

    // MARK: commands

    /// Sends one command and waits for its reply, connecting first if needed; the whole
    /// exchange gets the command timeout plus `extraMilliseconds` (a blocking command's block
    /// time). An error reply is thrown; a failure to talk also closes the connection.
    public func command(_ arguments: [RedisArgument], extraMilliseconds: Int = 0) throws(RedisError) -> RedisReply {
        let reply = try exchange([arguments], extraMilliseconds: extraMilliseconds)[0]
        if case .error(let text) = reply {
            let error = replyError(text)
            // NOAUTH and friends: reconnecting (with AUTH) is the only way forward.
            if error.code == .authenticationFailed { disconnect() }
            throw error
        }
        return reply
    }

    /// A reply that may have been cut short (`commandReadingWhatFits`).
    public enum BoundedReply: Sendable, Equatable {
        case whole(RedisReply)
        /// What was read before the reply went past `replyLimits` (arrays cut short end in
        /// `RESPReader.truncated`); `bulkTooLong` when a single bulk string was what did not fit.
        /// The connection was dropped: the rest of the reply is never read.
        case cut(partial: RedisReply, bulkTooLong: Bool)
    }

    /// `command`, for a reply that may not fit the limits (entries someone wrote into Redis):
    /// instead of failing, what was read of it comes back.
    public func commandReadingWhatFits(_ arguments: [RedisArgument], extraMilliseconds: Int = 0)
        throws(RedisError) -> BoundedReply
    {
        do {
            return .whole(try command(arguments, extraMilliseconds: extraMilliseconds))
        } catch {
            guard let cut = error.cutReply else { throw error }
            return .cut(partial: cut.partial, bulkTooLong: cut.bulkTooLong)
        }
    }

    /// Sends several commands at once and waits for all replies, in order: one round trip, one
    /// deadline. Error replies come back as `.error` elements; a failure to talk throws (and closes).
    public func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        try exchange(commands, extraMilliseconds: 0)
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

    // MARK: the exchange

    /// Writes `commands` and reads one reply each before the deadline.
    private func exchange(_ commands: [[RedisArgument]], extraMilliseconds: Int) throws(RedisError) -> [RedisReply] {
        let timeout = options.commandTimeoutMilliseconds + extraMilliseconds
        let deadline = MonotonicClock.nowMilliseconds() + Int64(timeout)
        let fd = try socket(of: openContext())
        var request = Self.encode(commands)
        // The request may hold a password: wiped whatever happens.
        defer { _ = request.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        var sent = 0
        while sent < request.count {
            let result: IOResult<Int>
            do {
                result = try request.withUnsafeBytes { raw throws(SystemError) in
                    try fd.send(UnsafeRawBufferPointer(rebasing: raw[sent...]))
                }
            } catch {
                throw dropConnection(.connectionLost, "\(error)")
            }
            switch result {
            case .done(let count): sent += count
            case .wouldBlock: try wait(fd, for: .writable, until: deadline, timeout: timeout)
            }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while replies.count < commands.count {
            switch reader.next() {
            case .reply(let reply):
                replies.append(reply)
                continue
            case .tooLarge(let partial, let bulkTooLong):
                _ = dropConnection(.protocolError, "a reply over the size limit")
                throw replyTooLarge(partial: partial, bulkTooLong: bulkTooLong, commands: commands.count)
            case .malformed(let why):
                throw dropConnection(.protocolError, "not a RESP reply (\(why))")
            case .needMore:
                break
            }
            try wait(fd, for: .readable, until: deadline, timeout: timeout)
            let result: IOResult<Int>
            do {
                result = try chunk.withUnsafeMutableBytes { raw throws(SystemError) in try fd.read(into: raw) }
            } catch {
                throw dropConnection(.connectionLost, "\(error)")
            }
            switch result {
            case .done(0): throw dropConnection(.connectionLost, "the server closed the connection")
            case .done(let count):
                chunk.withUnsafeBytes { reader.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            case .wouldBlock: continue
            }
        }
        return replies
    }

    /// A reply over the limits; for a single command it carries what was read
    /// (`commandReadingWhatFits` takes it).
    private func replyTooLarge(partial: RedisReply, bulkTooLong: Bool, commands: Int) -> RedisError {
        RedisError(
            .replyTooLarge,
            "\(options.endpoint): a reply over the size limit (a bulk string over \(options.replyLimits.maxBulkBytes) "
                + "bytes or a reply over \(options.replyLimits.maxReplyBytes)); dropped unread",
            cutReply: commands == 1 ? RedisError.CutReply(partial: partial, bulkTooLong: bulkTooLong) : nil)
    }

    /// Waits for the socket until the deadline; past it the connection is dropped.
    private func wait(_ fd: FileDescriptor, for readiness: PollReadiness, until deadline: Int64, timeout: Int)
        throws(RedisError)
    {
        let left = deadline - MonotonicClock.nowMilliseconds()
        let ready: Bool
        do {
            ready = try left > 0 && fd.wait(for: readiness, timeoutMilliseconds: Int32(clamping: left))
        } catch {
            throw dropConnection(.connectionLost, "\(error)")
        }
        guard ready else {
            throw dropConnection(.timeout, "no whole reply within \(timeout) ms")
        }
    }

    /// The commands in RESP: an array of bulk strings each.
    static func encode(_ commands: [[RedisArgument]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(commands.reduce(0) { $0 + $1.reduce(16) { $0 + $1.bytes.count + 16 } })
        for arguments in commands {
            out.append(contentsOf: Array("*\(arguments.count)\r\n".utf8))
            for argument in arguments {
                out.append(contentsOf: Array("$\(argument.bytes.count)\r\n".utf8))
                out.append(contentsOf: argument.bytes)
                out.append(contentsOf: [0x0D, 0x0A])
            }
        }
        return out
    }

    // MARK: internals

    private func openContext() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        if context == nil { try connect() }
        return context!
    }

    private func socket(of context: UnsafeMutablePointer<redisContext>) -> FileDescriptor {
        FileDescriptor(rawValue: context.pointee.fd)
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

    /// Closes the connection (a late reply would answer the next command) and names why.
    private func dropConnection(_ code: RedisError.Code, _ why: String) -> RedisError {
        disconnect()
        return RedisError(code, "\(options.endpoint): \(why)")
    }

    /// Why connecting failed, from hiredis's context.
    private func failure(of context: UnsafeMutablePointer<redisContext>, errno savedErrno: Int32) -> RedisError {
        let text = withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let message = "\(options.endpoint): \(text.isEmpty ? "I/O error" : text)"
        if context.pointee.err == REDIS_ERR_IO
            && (savedErrno == EAGAIN || savedErrno == ETIMEDOUT || savedErrno == EINPROGRESS
                || text.contains("timed out"))
        {
            return RedisError(.timeout, message)
        }
        return RedisError(.connectionFailed, message)
    }

    private static func timeval(milliseconds: Int) -> Glibc.timeval {
        Glibc.timeval(tv_sec: milliseconds / 1_000, tv_usec: (milliseconds % 1_000) * 1_000)
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
