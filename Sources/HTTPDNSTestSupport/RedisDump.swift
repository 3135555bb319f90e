import HTTPDNSRedis

/// Reads back everything a Redis database holds, for tests that check what Redis can see.
public enum RedisDump {
    /// Every key and value of the connection's database, as bytes: strings, hash fields and
    /// values, stream ids, fields and values.
    public static func everything(_ redis: RedisConnection) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var cursor = "0"
        repeat {
            let step = try redis.scan(cursor: cursor, count: 100)
            cursor = step.cursor
            for key in step.keys {
                out.append(key)
                let name = String(decoding: key, as: UTF8.self)
                switch try redis.command(["TYPE", RedisArgument(key)]).text {
                case "string": out.append(try redis.get(name) ?? [])
                case "hash":
                    for pair in try redis.hashGetAll(name) { out += [pair.field, pair.value] }
                case "stream":
                    for entry in try redis.streamRange(name, from: "-", to: "+", count: nil) {
                        out.append(Array(entry.id.utf8))
                        for pair in entry.fields { out += [pair.field, pair.value] }
                    }
                case "none":
                    break  // expired between SCAN and TYPE
                case let other:
                    throw HarnessError("unexpected Redis key type \(other ?? "?") for \(name)")
                }
            }
        } while cursor != "0"
        return out
    }

    /// Whether `needle` occurs in any of `haystack`.
    public static func contains(_ haystack: [[UInt8]], _ needle: String) -> Bool {
        let bytes = Array(needle.utf8)
        return haystack.contains { item in
            guard item.count >= bytes.count else { return false }
            return (0...(item.count - bytes.count)).contains { item[$0..<($0 + bytes.count)].elementsEqual(bytes) }
        }
    }
}

extension RedisServer {
    /// A connection to the server's Unix socket (with its password).
    public func connection(commandTimeoutMilliseconds: Int = 2_000) -> RedisConnection {
        RedisConnection(
            options: RedisOptions(
                endpoint: .unix(path: socketPath), password: password.map { RedisPassword(Array($0.utf8)) },
                connectTimeoutMilliseconds: 1_000, commandTimeoutMilliseconds: commandTimeoutMilliseconds))
    }
}
