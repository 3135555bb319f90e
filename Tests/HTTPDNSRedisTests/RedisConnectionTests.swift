import Dispatch
import Glibc
import HTTPDNSRedis
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// The hiredis owner against Debian's real redis-server.
struct RedisConnectionTests {
    static func connection(
        to server: RedisServer, password: String? = nil, database: Int = 0, commandTimeout: Int = 2_000
    )
        -> RedisConnection
    {
        RedisConnection(
            options: RedisOptions(
                endpoint: .unix(path: server.socketPath), database: database,
                password: password.map { RedisPassword(Array($0.utf8)) }, connectTimeoutMilliseconds: 2_000,
                commandTimeoutMilliseconds: commandTimeout))
    }

    @Test func binarySafeRoundTripOverUnixSocketAndTCP() throws {
        let server = try RedisServer(tcp: true)
        let value: [UInt8] = [0, 1, 2, 0xFF, 0x0A, 0x0D, 0x20, 0]
        let unix = Self.connection(to: server)
        try unix.set("k", value)
        let tcp = RedisConnection(options: RedisOptions(endpoint: .tcp(host: "127.0.0.1", port: Int(server.port!))))
        #expect(try tcp.get("k") == value)
        #expect(try tcp.get("missing") == nil)
        #expect(try unix.delete(["k", "missing"]) == 1)
        #expect(try tcp.get("k") == nil)
        #expect(try unix.get("k") == nil)
    }

    @Test func setOnlyIfAbsentWithExpiry() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        #expect(try redis.set("lock", Array("a".utf8), expireMilliseconds: 60_000, onlyIfAbsent: true))
        #expect(try redis.set("lock", Array("b".utf8), expireMilliseconds: 60_000, onlyIfAbsent: true) == false)
        #expect(try redis.get("lock") == Array("a".utf8))
        let left = try redis.millisecondsToLive("lock")
        #expect(left > 50_000 && left <= 60_000)
        #expect(try redis.millisecondsToLive("nothing") == -2)
        try redis.set("plain", [1])
        #expect(try redis.millisecondsToLive("plain") == -1)
        // PX is honoured: the key is gone after its expiry.
        try redis.set("short", [1], expireMilliseconds: 30)
        #expect(try eventually(1) { try redis.get("short") == nil })
    }

    @Test func selectKeepsDatabasesApart() throws {
        let server = try RedisServer()
        let three = Self.connection(to: server, database: 3)
        try three.set("k", [3])
        #expect(try Self.connection(to: server).get("k") == nil)
        #expect(try Self.connection(to: server, database: 3).get("k") == [3])
    }

    @Test func authWithTheRightPasswordWorks() throws {
        let server = try RedisServer(password: "correct horse")
        let redis = Self.connection(to: server, password: "correct horse")
        try redis.set("k", [1])
        #expect(try redis.get("k") == [1])
    }

    @Test func wrongPasswordIsAnAuthenticationErrorThatNeverShowsThePassword() throws {
        let server = try RedisServer(password: "correct horse")
        let secret = "Tr0ub4dor&3-wrong"
        let redis = Self.connection(to: server, password: secret)
        let error = try #require(throws: RedisError.self) { try redis.get("k") }
        #expect(error.code == .authenticationFailed)
        #expect(error.message.contains("wrong password"))
        #expect(!"\(error)".contains(secret) && !String(reflecting: error).contains(secret))
        #expect(error.serverReply == nil)
        #expect(!redis.isConnected)
        #expect(!"\(redis.options)".contains(secret) && !String(reflecting: redis.options).contains(secret))
    }

    @Test func noPasswordAgainstAServerThatWantsOneIsAnAuthenticationError() throws {
        let server = try RedisServer(password: "pw")
        let error = try #require(throws: RedisError.self) { try Self.connection(to: server).get("k") }
        #expect(error.code == .authenticationFailed)
        #expect(error.message.contains("NOAUTH"))
    }

    @Test func aPasswordForAServerWithoutOneSaysSo() throws {
        let server = try RedisServer()
        let error = try #require(throws: RedisError.self) { try Self.connection(to: server, password: "x").ping() }
        #expect(error.code == .authenticationFailed)
        #expect(error.message.contains("no password set"))
    }

    @Test func nothingListeningIsAConnectionFailure() throws {
        let directory = TemporaryDirectory(prefix: "nored")
        let unix = RedisConnection(options: RedisOptions(endpoint: .unix(path: directory.file("none.sock"))))
        let unixError = try #require(throws: RedisError.self) { try unix.ping() }
        #expect(unixError.code == .connectionFailed)
        #expect(unixError.message.hasPrefix("unix:\(directory.file("none.sock")): "))

        // A port this test holds bound without listening: the connect is refused, and no other
        // socket can take the port meanwhile (a port freed before the connect could be reused).
        let (bound, port) = try TCPSocket.bindLoopback()
        defer { bound.close() }
        let tcp = RedisConnection(options: RedisOptions(endpoint: .tcp(host: "127.0.0.1", port: Int(port))))
        let tcpError = try #require(throws: RedisError.self) { try tcp.ping() }
        #expect(tcpError.code == .connectionFailed)
        #expect(tcpError.message.contains("redis://127.0.0.1:\(port)"))
    }

    @Test func aKilledServerIsAConnectionLossAndTheNextCommandReconnects() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        try redis.set("k", [1])
        server.kill()
        let error = try #require(throws: RedisError.self) { try redis.get("k") }
        #expect(error.code == .connectionLost || error.code == .connectionFailed)
        #expect(!redis.isConnected)
        #expect(throws: RedisError.self) { try redis.ping() }  // still down
        try server.restart()
        try redis.ping()
        #expect(try redis.get("k") == nil)  // restarted empty: nothing was saved
    }

    @Test func aStalledServerTimesOutAndTheConnectionIsReplaced() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server, commandTimeout: 200)
        try redis.set("k", [7])
        let pid = try #require(server.pid)
        Glibc.kill(pid, SIGSTOP)
        let error = try #require(throws: RedisError.self) { try redis.get("k") }
        Glibc.kill(pid, SIGCONT)
        #expect(error.code == .timeout)
        #expect(!redis.isConnected)
        #expect(try redis.get("k") == [7])
    }

    @Test func outOfMemoryRefusesWritesButReadsWork() throws {
        let server = try RedisServer(arguments: ["--maxmemory", "1mb", "--maxmemory-policy", "noeviction"])
        let redis = Self.connection(to: server)
        try redis.set("first", [1])
        let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
        var failure: RedisError?
        for index in 0..<200 {
            do {
                try redis.set("fill-\(index)", chunk)
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure)
        #expect(error.code == .outOfMemory)
        #expect(error.serverReply?.hasPrefix("OOM") == true)
        #expect(redis.isConnected)
        #expect(try redis.get("first") == [1])
    }

    @Test func streamsAddReadRangeAndReportTrimming() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        #expect(try redis.streamInfo("s") == nil)
        var ids: [String] = []
        for index in 0..<300 {
            ids.append(
                try redis.streamAdd(
                    "s", maxLength: 100,
                    fields: [RedisFieldValue(field: Array("v".utf8), value: Array(String(index).utf8))]))
        }
        let info = try #require(try redis.streamInfo("s"))
        let length = try #require(info["length"]?.integer)
        #expect(length >= 100 && length < 300)
        #expect(info["last-generated-id"]?.text == ids.last)
        // Trimming is visible: the first entry left is not the first one added.
        let first = try redis.streamRange("s", from: "-", to: "+", count: 1)
        #expect(first.count == 1 && first[0].id != ids[0])

        let after = try redis.streamRead("s", after: ids[297], count: 10, blockMilliseconds: nil).entries
        #expect(after.map(\.id) == [ids[298], ids[299]])
        #expect(after.map { $0.value(of: "v") } == [Array("298".utf8), Array("299".utf8)])
        let nothing = try redis.streamRead("s", after: ids[299], count: 10, blockMilliseconds: 50)
        #expect(nothing.entries.isEmpty && nothing.skippedID == nil)
    }

    @Test func blockingReadWakesForANewEntry() throws {
        let server = try RedisServer()
        let reader = Self.connection(to: server, commandTimeout: 5_000)
        let writer = Self.connection(to: server)
        let last = try writer.streamAdd("s", maxLength: nil, fields: [RedisFieldValue(field: [1], value: [2])])
        let box = ResultBox()
        let started = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let unsafeReader = reader
        spawnThread {
            started.signal()
            box.entries = try? unsafeReader.streamRead("s", after: last, count: 10, blockMilliseconds: 4_000).entries
            box.done.signal()
        }
        started.wait()
        let added = try writer.streamAdd("s", maxLength: nil, fields: [RedisFieldValue(field: [3], value: [4])])
        box.done.wait()
        #expect(box.entries?.map(\.id) == [added])
    }

    @Test func hashesAndScans() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        let fields = (0..<250).map {
            RedisFieldValue(field: Array("f\($0)".utf8), value: [UInt8(truncatingIfNeeded: $0)])
        }
        #expect(try redis.hashSet("h", fields) == 250)
        var cursor = "0"
        var scanned: [RedisFieldValue] = []
        repeat {
            let step = try redis.hashScan("h", cursor: cursor, count: 50)
            cursor = step.cursor
            scanned += step.fields
        } while cursor != "0"
        // HSCAN may return a field twice (while the hash rehashes): compare as a map.
        let pairs = { (list: [RedisFieldValue]) in
            Dictionary(list.map { ($0.field, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        #expect(pairs(scanned) == pairs(fields))
        for index in 0..<30 { try redis.set("key-\(index)", [1]) }
        var keys: Set<[UInt8]> = []
        cursor = "0"
        repeat {
            let step = try redis.scan(cursor: cursor, match: "key-*", count: 7)
            cursor = step.cursor
            keys.formUnion(step.keys)
        } while cursor != "0"
        #expect(keys.count == 30)
    }

    @Test func pipelineKeepsErrorRepliesInPlace() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        let replies = try redis.pipeline([["SET", "a", "1"], ["INCR", "a"], ["LPUSH", "a", "x"], ["GET", "a"]])
        #expect(replies.count == 4)
        #expect(replies[0] == .status("OK"))
        #expect(replies[1] == .integer(2))
        guard case .error(let text) = replies[2] else {
            Issue.record("expected WRONGTYPE, got \(replies[2])")
            return
        }
        #expect(text.hasPrefix("WRONGTYPE"))
        #expect(replies[3] == .bulk(Array("2".utf8)))
    }

    @Test func scriptsRunByDigestAndReloadAfterAFlush() throws {
        let server = try RedisServer()
        let redis = Self.connection(to: server)
        let script = RedisScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
        #expect(try redis.evaluate(script, keys: ["n"], arguments: ["5"]) == .integer(5))
        _ = try redis.command(["SCRIPT", "FLUSH"])
        #expect(try redis.evaluate(script, keys: ["n"], arguments: ["2"]) == .integer(7))
        // A restarted server does not know the digest either. The first command finds the old
        // connection dead (never retried: it may not be safe to repeat); the next reconnects.
        try server.restart()
        let error = try #require(throws: RedisError.self) { try redis.evaluate(script, keys: ["n"], arguments: ["1"]) }
        #expect(error.code == .connectionLost)
        #expect(try redis.evaluate(script, keys: ["n"], arguments: ["1"]) == .integer(1))
    }
}

/// The whole exchange has a deadline and a reply a size limit, whatever the server sends.
struct RedisBoundsTests {
    /// A path that turned slow (one byte every 100 ms) times out within the command timeout
    /// for the whole reply, not per read (each byte alone would be in time); once the path is
    /// fast again, the next command reconnects and works.
    @Test func aTricklingReplyTimesOutWithinTheCommandTimeout() throws {
        let server = try RedisServer()
        let proxy = try SocketProxy(to: server.socketPath, in: server.directory)
        let redis = RedisConnection(
            options: RedisOptions(
                endpoint: .unix(path: proxy.socketPath), connectTimeoutMilliseconds: 2_000,
                commandTimeoutMilliseconds: 500))
        try redis.set("k", Array(repeating: 0x61, count: 100))
        proxy.trickleMilliseconds = 100
        let started = MonotonicClock.nowMilliseconds()
        let error = try #require(throws: RedisError.self) { try redis.get("k") }
        let took = MonotonicClock.nowMilliseconds() - started
        #expect(error.code == .timeout, "\(error)")
        #expect(error.message.contains("no whole reply within 500 ms"))
        // Real time is what is measured: the deadline is 500 ms; the old per-read timeout
        // would have taken the 10 s the reply trickles for.
        #expect(took >= 450 && took < 3_000, "took \(took) ms")
        #expect(!redis.isConnected, "dropped: a late reply must not answer the next command")
        proxy.trickleMilliseconds = nil
        #expect(try redis.get("k") == Array(repeating: 0x61, count: 100))
    }

    /// A stream entry with a field over the bulk limit is skipped without being read: the
    /// entries before it come back whole, its id is named, the read after it goes on, and the
    /// entry's bytes never crossed the socket.
    @Test func aStreamEntryOverTheLimitIsSkippedUnread() throws {
        let server = try RedisServer()
        let proxy = try SocketProxy(to: server.socketPath, in: server.directory)
        let writer = RedisConnectionTests.connection(to: server)
        let first = try writer.streamAdd("s", maxLength: nil, fields: [RedisFieldValue(field: [1], value: [1])])
        let big = try writer.streamAdd(
            "s", maxLength: nil, fields: [RedisFieldValue(field: [2], value: Array(repeating: 7, count: 4 << 20))])
        let last = try writer.streamAdd("s", maxLength: nil, fields: [RedisFieldValue(field: [3], value: [3])])
        let reader = RedisConnection(
            options: RedisOptions(
                endpoint: .unix(path: proxy.socketPath), replyLimits: RESPReader.Limits(maxBulkBytes: 64 << 10)))
        let read = try reader.streamRead("s", after: "0", count: 10, blockMilliseconds: nil)
        #expect(read.entries.map(\.id) == [first])
        #expect(read.skippedID == big)
        let after = try reader.streamRead("s", after: big, count: 10, blockMilliseconds: nil)
        #expect(after.entries.map(\.id) == [last] && after.skippedID == nil)
        #expect(proxy.bytesToClients < 1 << 20, "\(proxy.bytesToClients) bytes read for a 4 MiB entry")
        // Any other reply over the limit fails the command (and drops the connection).
        try writer.set("huge", Array(repeating: 1, count: 200 << 10))
        let error = try #require(throws: RedisError.self) { try reader.get("huge") }
        #expect(error.code == .replyTooLarge)
        #expect(try reader.get("missing") == nil, "reconnected")
    }
}

/// A blocking read's result, handed from its thread.
private final class ResultBox: @unchecked Sendable {
    var entries: [RedisStreamEntry]?
    let done = DispatchSemaphore(value: 0)
}
