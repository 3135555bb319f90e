import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSodium

/// The fleet's Redis operations, sealed: one blocking connection, used by one thread at a time
/// (`FleetClient` runs one for commands and one for the change stream, each on its own thread).
///
/// Every value is sealed with the fleet key before it is written and opened (then validated)
/// after it is read; a value that fails either way is reported as rejected, never returned.
public final class FleetRedis {
    /// The sealing kinds: a value sealed as one kind never opens as another.
    enum Kind {
        static let answer = "dns"
        static let change = "change"
        static let snapshot = "snapshot"
    }

    /// The largest value, stream entry field, snapshot field or epoch read from Redis (a sealed
    /// cookie change is under 10 KiB): larger ones are skipped without being read, and counted
    /// as rejected (httpdnsd.conf(5), [Fleet]). Also each connection's bulk string limit.
    public static let maxValueBytes = 64 << 10
    /// What one reply may take in all (a stream read of 500 changes is about 5 MB at most).
    public static let maxReplyBytes = 8 << 20
    /// The most entries and bytes one snapshot read takes in (each of its steps counts as an
    /// entry at least). The snapshot holds the shared jars' cookies, a few thousand per jar and
    /// under a kilobyte each once sealed: past these, Redis does not hold what the fleet writes,
    /// and the read fails rather than grow without end.
    public static let maxSnapshotEntries = 1 << 17
    public static let maxSnapshotBytes = 64 << 20

    public let connection: RedisConnection
    public let keyspace: FleetKeyspace
    private let key: FleetKey
    /// Stream length kept by `XADD MAXLEN ~`.
    public let streamMaxLength: Int

    public init(connection: RedisConnection, key: FleetKey, fleetName: String, streamMaxLength: Int = 10_000) {
        self.connection = connection
        self.key = key
        self.keyspace = FleetKeyspace(fleetName: fleetName, hasher: key)
        self.streamMaxLength = streamMaxLength
    }

    // MARK: cache

    /// What a lookup found: usable answers by family, and why others were rejected.
    public struct Lookup: Sendable, Equatable {
        public var hits: [IPFamily: FleetCacheHit] = [:]
        public var rejected: [String] = []
    }

    /// Reads the fleet answers of `host` (value and remaining lifetime, one round trip); a
    /// value over `maxValueBytes` is not read but rejected.
    public func lookUp(host: String, families: [IPFamily], nowUnixMs: Int64) throws(RedisError) -> Lookup {
        let keys = families.map { keyspace.cacheKey(host: host, family: $0) }
        let reply = try connection.evaluate(
            FleetScripts.lookUp, keys: keys.map { RedisArgument($0) }, arguments: [RedisArgument(Self.maxValueBytes)])
        guard let replies = reply.array, replies.count == 2 * keys.count else {
            throw RedisError(.unexpectedReply, "\(connection.options.endpoint): unexpected reply to the lookup script")
        }
        var lookup = Lookup()
        for (index, family) in families.enumerated() {
            let value = replies[2 * index]
            let left = replies[2 * index + 1]
            if value.integer == -1 {
                lookup.rejected.append("an answer over \(Self.maxValueBytes) bytes")
                continue
            }
            guard let sealed = value.bytes else { continue }
            guard let plaintext = key.open(sealed, kind: Kind.answer, name: keys[index]) else {
                lookup.rejected.append("an answer failed to open")
                continue
            }
            switch FleetCacheRecord.decode(plaintext, host: host, family: family) {
            case .failure(let error):
                lookup.rejected.append("an answer is invalid: \(error.reason)")
            case .success(let record):
                // -2: the key expired between GET and PTTL; -1: no expiry (the record's own counts).
                let keyLeft = left.integer ?? -1
                guard keyLeft != -2 else { continue }
                let hit = FleetCacheHit(record: record, nowUnixMs: nowUnixMs, keyMillisecondsLeft: keyLeft)
                if let hit { lookup.hits[family] = hit }
            }
        }
        return lookup
    }

    /// Publishes answers with their remaining lifetime as the Redis expiry (`SET PX`), then
    /// releases the lock if asked (one round trip for the answers, one for the release).
    public func publish(_ records: [FleetCacheRecord], nowUnixMs: Int64, releasingLock lock: FleetLock?)
        throws(RedisError)
    {
        var commands: [[RedisArgument]] = []
        for record in records {
            let left = record.millisecondsLeft(nowUnixMs: nowUnixMs)
            guard left > 0 else { continue }
            let name = keyspace.cacheKey(host: record.host, family: record.family)
            let sealed = key.seal(record.encoded(), kind: Kind.answer, name: name)
            commands.append(["SET", RedisArgument(name), RedisArgument(sealed), "PX", RedisArgument(left)])
        }
        if !commands.isEmpty { _ = try connection.pipelineThrowingErrors(commands) }
        if let lock { try releaseLock(lock) }
    }

    /// `SET lock token NX PX lifetime`: whether this caller now holds the lock.
    public func acquireLock(_ lock: FleetLock, lifetimeMs: Int) throws(RedisError) -> Bool {
        try connection.set(
            keyspace.lockKey(host: lock.host), Array(lock.token.utf8), expireMilliseconds: lifetimeMs,
            onlyIfAbsent: true)
    }

    /// Releases the lock if this caller still holds it.
    public func releaseLock(_ lock: FleetLock) throws(RedisError) {
        _ = try connection.evaluate(
            FleetScripts.releaseLock, keys: [RedisArgument(keyspace.lockKey(host: lock.host))],
            arguments: [RedisArgument(lock.token)])
    }

    // MARK: cookie changes

    /// Appends changes to the stream and merges them into the snapshot (newest version wins
    /// there), atomically per batch; returns the last stream id. Safe to repeat: receivers
    /// ignore versions they already hold.
    public func publishChanges(_ changes: [FleetCookieChange], batchSize: Int = 100) throws(RedisError)
        -> FleetStreamID?
    {
        var last: FleetStreamID?
        var start = changes.startIndex
        while start < changes.endIndex {
            let end = min(start + max(1, batchSize), changes.endIndex)
            var arguments: [RedisArgument] = [RedisArgument(streamMaxLength)]
            for change in changes[start..<end] {
                let field = keyspace.snapshotField(change.address)
                let plaintext = change.encoded()
                arguments.append(RedisArgument(field))
                arguments.append(RedisArgument(change.version.sortKey))
                arguments.append(RedisArgument(key.seal(plaintext, kind: Kind.change, name: keyspace.changesKey)))
                arguments.append(RedisArgument(key.seal(plaintext, kind: Kind.snapshot, name: snapshotName(field))))
            }
            let reply = try connection.evaluate(
                FleetScripts.publishChanges,
                keys: [RedisArgument(keyspace.changesKey), RedisArgument(keyspace.snapshotKey)], arguments: arguments)
            guard let text = reply.text, let id = FleetStreamID(text) else {
                throw RedisError(
                    .unexpectedReply, "\(connection.options.endpoint): unexpected reply to the publish script")
            }
            last = id
            start = end
        }
        return last
    }

    /// One change read from the stream, opened, or why it was rejected.
    public struct StreamChange: Sendable, Equatable {
        public var id: FleetStreamID
        public var change: Result<FleetCookieChange, FleetRecordError>
    }

    /// The changes after `id` (waiting up to `blockMilliseconds` for one when there is none).
    /// An entry over `maxValueBytes`, or one too large for a reply by itself, is not read: it
    /// comes back as rejected, so the next read starts after it.
    public func readChanges(after id: FleetStreamID, count: Int, blockMilliseconds: Int?) throws(RedisError)
        -> [StreamChange]
    {
        let read = try connection.streamRead(
            keyspace.changesKey, after: id.description, count: count, blockMilliseconds: blockMilliseconds)
        var changes: [StreamChange] = read.entries.compactMap { entry in
            guard let id = FleetStreamID(entry.id) else { return nil }
            // The publish script stores the sealed change in field "c".
            guard let sealed = entry.value(of: "c"),
                let plaintext = key.open(sealed, kind: Kind.change, name: keyspace.changesKey)
            else { return StreamChange(id: id, change: .failure(FleetRecordError("a change failed to open"))) }
            return StreamChange(id: id, change: FleetCookieChange.decode(plaintext))
        }
        if let skipped = read.skippedID.flatMap(FleetStreamID.init) {
            changes.append(
                StreamChange(
                    id: skipped, change: .failure(FleetRecordError("a change over \(Self.maxValueBytes) bytes"))))
        }
        return changes
    }

    /// Everything in the snapshot, and the stream id to go on from afterwards (read first, so
    /// that changes made during the read are read again from the stream; applying twice is
    /// harmless).
    public struct Snapshot: Sendable, Equatable {
        public var changes: [FleetCookieChange] = []
        public var rejected: [String] = []
        /// Entries over `maxValueBytes`, counted and never read.
        public var oversized = 0
        public var resumeAfter: FleetStreamID = .zero
    }

    public func readSnapshot(batch: Int = 500) throws(RedisError) -> Snapshot {
        var snapshot = Snapshot()
        snapshot.resumeAfter = try observe(remembering: [], creatingEpoch: false).lastGeneratedID ?? .zero
        try scanSnapshot(batch: batch) { pairs, skipped in
            snapshot.oversized += skipped
            for pair in pairs {
                let field = String(decoding: pair.field, as: UTF8.self)
                switch openSnapshotValue(pair.value, field: field) {
                case .success(let change): snapshot.changes.append(change)
                case .failure(let error): snapshot.rejected.append(error.reason)
                }
            }
        }
        return snapshot
    }

    /// Removes tombstones older than `horizonMs` (Unix ms) from the snapshot, each only if no
    /// newer change replaced it meanwhile; returns how many went.
    @discardableResult
    public func sweepSnapshot(horizonMs: Int64, batch: Int = 500) throws(RedisError) -> Int {
        var removed = 0
        try scanSnapshot(batch: batch) { (pairs, _) throws(RedisError) in
            for pair in pairs {
                guard
                    case .success(let change) = openSnapshotValue(
                        pair.value, field: String(decoding: pair.field, as: UTF8.self)),
                    change.isDeletion, change.version.updatedAtMs < horizonMs
                else { continue }
                let reply = try connection.evaluate(
                    FleetScripts.deleteFieldIfUnchanged, keys: [RedisArgument(keyspace.snapshotKey)],
                    arguments: [RedisArgument(pair.field), RedisArgument(pair.value)])
                removed += Int(reply.integer ?? 0)
            }
        }
        return removed
    }

    /// Walks the snapshot a step at a time; `body` gets each step's pairs that fit
    /// `maxValueBytes` and how many did not (those are never read). Fails past
    /// `maxSnapshotEntries` or `maxSnapshotBytes`: a Redis whose cursor never ends, or that claims
    /// more skipped entries than exist, is bounded like any other peer.
    private func scanSnapshot(
        batch: Int, _ body: ([RedisFieldValue], Int) throws(RedisError) -> Void
    ) throws(RedisError) {
        var cursor = "0"
        var entries = 0
        var bytes = 0
        repeat {
            let reply = try connection.evaluate(
                FleetScripts.scanSnapshot, keys: [RedisArgument(keyspace.snapshotKey)],
                arguments: [RedisArgument(cursor), RedisArgument(batch), RedisArgument(Self.maxValueBytes)])
            guard let parts = reply.array, parts.count == 3, let next = parts[0].text, let flat = parts[1].array,
                flat.count % 2 == 0, let skipped = parts[2].integer, skipped >= 0,
                skipped <= Int64(Self.maxSnapshotEntries)
            else {
                throw RedisError(
                    .unexpectedReply, "\(connection.options.endpoint): unexpected reply to the scan script")
            }
            var pairs: [RedisFieldValue] = []
            for index in stride(from: 0, to: flat.count, by: 2) {
                guard let field = flat[index].bytes, let value = flat[index + 1].bytes else { continue }
                bytes += field.count + value.count
                pairs.append(RedisFieldValue(field: field, value: value))
            }
            entries += max(1, flat.count / 2 + Int(skipped))
            guard entries <= Self.maxSnapshotEntries, bytes <= Self.maxSnapshotBytes else {
                throw RedisError(
                    .unexpectedReply,
                    "\(connection.options.endpoint): the snapshot goes past \(Self.maxSnapshotEntries) entries "
                        + "or \(Self.maxSnapshotBytes >> 20) MiB")
            }
            try body(pairs, Int(skipped))
            cursor = next
        } while cursor != "0"
    }

    // MARK: synchronisation

    /// `PING`: whether Redis answers at all.
    public func ping() throws(RedisError) {
        _ = try connection.command(["PING"])
    }

    /// Looks at the stream and the dataset's epoch (creating the epoch if Redis has none), and
    /// checks whether the remembered entries are still there; no entry is read whole.
    public func observe(remembering ids: [FleetStreamID]) throws(RedisError) -> FleetStreamObservation {
        try observe(remembering: ids, creatingEpoch: true)
    }

    private func observe(remembering ids: [FleetStreamID], creatingEpoch: Bool) throws(RedisError)
        -> FleetStreamObservation
    {
        let looked = Array(Set(ids).subtracting([.zero]))
        var reply = try observeScript(looked)
        // Read first: a full Redis refuses even a SET NX that would change nothing, and
        // replication must go on reading while it is full.
        if creatingEpoch && reply.first == .null {
            try connection.set(keyspace.epochKey, Array(Sodium.randomHex(byteCount: 16).utf8), onlyIfAbsent: true)
            reply = try observeScript(looked)
        }
        guard reply.count == 5 + looked.count else {
            throw RedisError(.unexpectedReply, "\(connection.options.endpoint): unexpected reply to the observe script")
        }
        let epoch: String
        switch reply[0] {
        case .bulk(let bytes): epoch = String(decoding: bytes, as: UTF8.self)
        case .null where !creatingEpoch: epoch = ""
        case .integer(-1):
            throw RedisError(
                .unexpectedReply, "\(connection.options.endpoint): the fleet epoch is over \(Self.maxValueBytes) bytes")
        default:
            throw RedisError(.unexpectedReply, "\(connection.options.endpoint): the fleet epoch vanished")
        }
        var missing = Set<FleetStreamID>()
        for (index, id) in looked.enumerated() where reply[5 + index].integer == 0 { missing.insert(id) }
        return FleetStreamObservation(
            epoch: epoch, firstID: reply[4].text.flatMap(FleetStreamID.init),
            lastGeneratedID: reply[2].text.flatMap(FleetStreamID.init), entriesAdded: reply[3].integer,
            length: reply[1].integer ?? 0, missing: missing)
    }

    private func observeScript(_ ids: [FleetStreamID]) throws(RedisError) -> [RedisReply] {
        try connection.evaluate(
            FleetScripts.observe, keys: [RedisArgument(keyspace.epochKey), RedisArgument(keyspace.changesKey)],
            arguments: [RedisArgument(Self.maxValueBytes)] + ids.map { RedisArgument($0.description) }
        ).array ?? []
    }

    // MARK: internals

    private func snapshotName(_ field: String) -> String { keyspace.snapshotKey + ":" + field }

    /// A snapshot value is the version sort key, then the sealed change.
    private func openSnapshotValue(_ value: [UInt8], field: String) -> Result<FleetCookieChange, FleetRecordError> {
        guard value.count > FleetVersion.sortKeyLength,
            let plaintext = key.open(
                Array(value[FleetVersion.sortKeyLength...]), kind: Kind.snapshot, name: snapshotName(field))
        else { return .failure(FleetRecordError("a snapshot entry failed to open")) }
        let decoded = FleetCookieChange.decode(plaintext)
        // The visible version must be the sealed one, and the field the change's own.
        if case .success(let change) = decoded,
            change.version.sortKey.utf8.elementsEqual(value.prefix(FleetVersion.sortKeyLength)) == false
                || keyspace.snapshotField(change.address) != field
        {
            return .failure(FleetRecordError("a snapshot entry does not match its field or version"))
        }
        return decoded
    }
}

@available(*, unavailable)
extension FleetRedis: Sendable {}

/// A claim on a host's query lock: the host and this flight's random token.
public struct FleetLock: Sendable, Equatable {
    public var host: String
    public var token: String

    public init(host: String, token: String) {
        self.host = host
        self.token = token
    }
}
