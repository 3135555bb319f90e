import HTTPDNSRedis

/// Commands tests use to set Redis up and to look at what it holds; the daemon's own are in
/// HTTPDNSRedis (each of these is one `command`).
extension RedisConnection {
    /// `PING`.
    public func ping() throws(RedisError) {
        _ = try command(["PING"])
    }

    /// `PTTL key`: milliseconds left, -1 for a key without expiry, -2 for no key.
    public func millisecondsToLive(_ key: String) throws(RedisError) -> Int64 {
        let reply = try command(["PTTL", RedisArgument(key)])
        guard let value = reply.integer else { throw unexpectedReply(to: "PTTL") }
        return value
    }

    /// `DEL key...`: how many existed.
    @discardableResult
    public func delete(_ keys: [String]) throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        let reply = try command(["DEL"] + keys.map { RedisArgument($0) })
        guard let count = reply.integer else { throw unexpectedReply(to: "DEL") }
        return Int(count)
    }

    /// `XADD key [MAXLEN ~ n] * field value...`: the new entry's id.
    public func streamAdd(_ key: String, maxLength: Int?, fields: [RedisFieldValue]) throws(RedisError) -> String {
        var arguments: [RedisArgument] = ["XADD", RedisArgument(key)]
        if let maxLength { arguments += ["MAXLEN", "~", RedisArgument(maxLength)] }
        arguments.append("*")
        for pair in fields { arguments += [RedisArgument(pair.field), RedisArgument(pair.value)] }
        guard let id = try command(arguments).text else { throw unexpectedReply(to: "XADD") }
        return id
    }

    /// `HSET key field value...`: how many fields were new.
    @discardableResult
    public func hashSet(_ key: String, _ fields: [RedisFieldValue]) throws(RedisError) -> Int {
        guard !fields.isEmpty else { return 0 }
        var arguments: [RedisArgument] = ["HSET", RedisArgument(key)]
        for pair in fields { arguments += [RedisArgument(pair.field), RedisArgument(pair.value)] }
        guard let count = try command(arguments).integer else { throw unexpectedReply(to: "HSET") }
        return Int(count)
    }

    /// Every field of the hash at `key` (empty for a missing key), through the daemon's `HSCAN`.
    public func hashGetAll(_ key: String) throws(RedisError) -> [RedisFieldValue] {
        var fields: [RedisFieldValue] = []
        var cursor = "0"
        repeat {
            let step = try hashScan(key, cursor: cursor, count: 500)
            cursor = step.cursor
            fields += step.fields
        } while cursor != "0"
        return fields
    }

    /// One `SCAN cursor [MATCH pattern] COUNT n` step: the next cursor (`"0"` when done) and
    /// a batch of key names.
    public func scan(cursor: String, match pattern: String? = nil, count: Int = 100) throws(RedisError) -> (
        cursor: String, keys: [[UInt8]]
    ) {
        var arguments: [RedisArgument] = ["SCAN", RedisArgument(cursor)]
        if let pattern { arguments += ["MATCH", RedisArgument(pattern)] }
        arguments += ["COUNT", RedisArgument(count)]
        let reply = try command(arguments)
        guard let parts = reply.array, parts.count == 2, let next = parts[0].text, let list = parts[1].array else {
            throw unexpectedReply(to: "SCAN")
        }
        var keys: [[UInt8]] = []
        for key in list {
            guard let bytes = key.bytes else { throw unexpectedReply(to: "SCAN") }
            keys.append(bytes)
        }
        return (next, keys)
    }

    private func unexpectedReply(to command: String) -> RedisError {
        RedisError(.unexpectedReply, "\(options.endpoint): unexpected reply to \(command)")
    }
}
