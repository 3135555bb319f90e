/// One entry of a stream: its id (`MS-SEQ`) and its field/value pairs.
public struct RedisStreamEntry: Sendable, Equatable {
    public let id: String
    public let fields: [RedisFieldValue]

    public init(id: String, fields: [RedisFieldValue]) {
        self.id = id
        self.fields = fields
    }

    /// The value of the first field called `name`.
    public func value(of name: String) -> [UInt8]? {
        let wanted = Array(name.utf8)
        return fields.first { $0.field == wanted }?.value
    }
}

/// A field and its value, of a hash or a stream entry.
public struct RedisFieldValue: Sendable, Equatable {
    public let field: [UInt8]
    public let value: [UInt8]

    public init(field: [UInt8], value: [UInt8]) {
        self.field = field
        self.value = value
    }
}

/// The typed commands the fleet tier uses; each one is a single `command`.
extension RedisConnection {
    /// `GET key`: nil when the key does not exist (or expired).
    public func get(_ key: String) throws(RedisError) -> [UInt8]? {
        let reply = try command(["GET", RedisArgument(key)])
        if reply.isNull { return nil }
        guard let bytes = reply.bytes else { throw unexpected("GET", reply) }
        return bytes
    }

    /// `SET key value [PX ms] [NX]`: whether the value was written (false only when `NX` found
    /// the key present).
    @discardableResult
    public func set(_ key: String, _ value: [UInt8], expireMilliseconds: Int? = nil, onlyIfAbsent: Bool = false)
        throws(RedisError) -> Bool
    {
        var arguments: [RedisArgument] = ["SET", RedisArgument(key), RedisArgument(value)]
        if let expireMilliseconds { arguments += ["PX", RedisArgument(max(1, expireMilliseconds))] }
        if onlyIfAbsent { arguments.append("NX") }
        let reply = try command(arguments)
        return !reply.isNull
    }

    /// What `streamRead` got.
    public struct StreamRead: Sendable, Equatable {
        /// The entries read whole, oldest first.
        public var entries: [RedisStreamEntry]
        /// The entry after them that did not fit the reply limits (a field over the bulk limit,
        /// or too large for a reply by itself): its id, to go on after it; it was not read.
        public var skippedID: String?
    }

    /// `XREAD [COUNT n] [BLOCK ms] STREAMS key id`: the entries after `id`, oldest first; empty
    /// when none arrived within the block time (which the exchange's deadline includes).
    ///
    /// A reply over the limits is cut, not failed: the entries read whole come back, and the
    /// one that did not fit is named in `skippedID` when it can never fit (a bulk string over
    /// the limit, or the first entry of the reply); otherwise the next read starts with it.
    public func streamRead(_ key: String, after id: String, count: Int, blockMilliseconds: Int?)
        throws(RedisError) -> StreamRead
    {
        var arguments: [RedisArgument] = ["XREAD", "COUNT", RedisArgument(count)]
        if let blockMilliseconds { arguments += ["BLOCK", RedisArgument(blockMilliseconds)] }
        arguments += ["STREAMS", RedisArgument(key), RedisArgument(id)]
        switch try commandReadingWhatFits(arguments, extraMilliseconds: blockMilliseconds ?? 0) {
        case .whole(let reply):
            if reply.isNull { return StreamRead(entries: [], skippedID: nil) }
            guard let streams = reply.array else { throw unexpected("XREAD", reply) }
            var entries: [RedisStreamEntry] = []
            for stream in streams {
                guard let pair = stream.array, pair.count == 2, let list = pair[1].array else {
                    throw unexpected("XREAD", reply)
                }
                entries += try list.map { entry throws(RedisError) in try streamEntry(entry, command: "XREAD") }
            }
            return StreamRead(entries: entries, skippedID: nil)
        case .cut(let partial, let bulkTooLong):
            // [[key, [entry, ..., [id, [field, value, ... truncated]] or truncated]]]
            guard let stream = partial.array?.first?.array, stream.count >= 2, let list = stream[1].array else {
                throw unexpected("XREAD", partial)
            }
            var entries: [RedisStreamEntry] = []
            for entry in list {
                guard !Self.isCut(entry) else {
                    let id = entry.array?.first.flatMap { Self.isCut($0) ? nil : $0.text }
                    let neverFits = bulkTooLong || entries.isEmpty
                    return StreamRead(entries: entries, skippedID: neverFits ? id : nil)
                }
                entries.append(try streamEntry(entry, command: "XREAD"))
            }
            return StreamRead(entries: entries, skippedID: nil)
        }
    }

    /// Whether a partial reply holds the mark of where it was cut.
    private static func isCut(_ reply: RedisReply) -> Bool {
        if reply == RESPReader.truncated { return true }
        return reply.array?.contains(where: isCut) ?? false
    }

    /// `XRANGE key start end [COUNT n]` (`-` and `+` name the ends).
    public func streamRange(_ key: String, from start: String, to end: String, count: Int?)
        throws(RedisError) -> [RedisStreamEntry]
    {
        var arguments: [RedisArgument] = ["XRANGE", RedisArgument(key), RedisArgument(start), RedisArgument(end)]
        if let count { arguments += ["COUNT", RedisArgument(count)] }
        let reply = try command(arguments)
        guard let list = reply.array else { throw unexpected("XRANGE", reply) }
        return try list.map { entry throws(RedisError) in try streamEntry(entry, command: "XRANGE") }
    }

    /// `XINFO STREAM key` as field/reply pairs (`length`, `last-generated-id`,
    /// `max-deleted-entry-id`, `first-entry`, ...); nil when the stream does not exist.
    public func streamInfo(_ key: String) throws(RedisError) -> [String: RedisReply]? {
        let reply: RedisReply
        do {
            reply = try command(["XINFO", "STREAM", RedisArgument(key)])
        } catch  where error.serverReply?.hasPrefix("ERR no such key") == true {
            return nil
        }
        guard let flat = reply.array, flat.count % 2 == 0 else { throw unexpected("XINFO", reply) }
        var info: [String: RedisReply] = [:]
        for index in stride(from: 0, to: flat.count, by: 2) {
            guard let name = flat[index].text else { throw unexpected("XINFO", reply) }
            info[name] = flat[index + 1]
        }
        return info
    }

    /// One `HSCAN key cursor COUNT n` step: the next cursor (`"0"` when done) and a batch.
    public func hashScan(_ key: String, cursor: String, count: Int) throws(RedisError) -> (
        cursor: String, fields: [RedisFieldValue]
    ) {
        let reply = try command(["HSCAN", RedisArgument(key), RedisArgument(cursor), "COUNT", RedisArgument(count)])
        guard let parts = reply.array, parts.count == 2, let next = parts[0].text, let flat = parts[1].array else {
            throw unexpected("HSCAN", reply)
        }
        return (next, try pairs(flat, command: "HSCAN"))
    }

    // MARK: reply shapes

    private func streamEntry(_ reply: RedisReply, command: String) throws(RedisError) -> RedisStreamEntry {
        guard let parts = reply.array, parts.count == 2, let id = parts[0].text, let flat = parts[1].array else {
            throw unexpected(command, reply)
        }
        return RedisStreamEntry(id: id, fields: try pairs(flat, command: command))
    }

    private func pairs(_ flat: [RedisReply], command: String) throws(RedisError) -> [RedisFieldValue] {
        guard flat.count % 2 == 0 else { throw unexpected(command, .array(flat)) }
        var result: [RedisFieldValue] = []
        result.reserveCapacity(flat.count / 2)
        for index in stride(from: 0, to: flat.count, by: 2) {
            guard let field = flat[index].bytes, let value = flat[index + 1].bytes else {
                throw unexpected(command, .array(flat))
            }
            result.append(RedisFieldValue(field: field, value: value))
        }
        return result
    }

    private func unexpected(_ command: String, _ reply: RedisReply) -> RedisError {
        RedisError(.unexpectedReply, "\(options.endpoint): unexpected reply to \(command)")
    }
}
