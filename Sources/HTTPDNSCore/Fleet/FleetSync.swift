/// A Redis stream entry id, `MILLISECONDS-SEQUENCE`, ordered as Redis orders them.
public struct FleetStreamID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let milliseconds: UInt64
    public let sequence: UInt64

    public init(milliseconds: UInt64, sequence: UInt64) {
        self.milliseconds = milliseconds
        self.sequence = sequence
    }

    /// Parses `MS-SEQ` (Redis always writes both parts).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
            let milliseconds = UInt64(parts[0]), let sequence = UInt64(parts[1])
        else { return nil }
        self.init(milliseconds: milliseconds, sequence: sequence)
    }

    /// `0-0`: before every entry.
    public static let zero = FleetStreamID(milliseconds: 0, sequence: 0)

    public static func < (lhs: FleetStreamID, rhs: FleetStreamID) -> Bool {
        (lhs.milliseconds, lhs.sequence) < (rhs.milliseconds, rhs.sequence)
    }

    public var description: String { "\(milliseconds)-\(sequence)" }
}

/// How far this daemon has applied the fleet's changes: the Redis dataset it read them from
/// (its epoch) and the last stream entry applied. Stored with the applied changes, so a
/// restart resumes where the store is, not where the stream was.
public struct FleetCursor: Sendable, Equatable {
    public var epoch: String
    public var lastID: FleetStreamID

    public init(epoch: String, lastID: FleetStreamID) {
        self.epoch = epoch
        self.lastID = lastID
    }
}

/// What the daemon found in Redis when it (re)connected.
public struct FleetStreamObservation: Sendable, Equatable {
    /// The dataset's epoch (created by the first daemon that finds none).
    public var epoch: String
    /// The id of the oldest entry still in the stream; nil when there is no entry.
    public var firstID: FleetStreamID?
    /// The last id Redis generated for the stream (`XINFO STREAM`'s `last-generated-id`); nil
    /// when the stream does not exist.
    public var lastGeneratedID: FleetStreamID?
    /// Entries ever added (`entries-added`, Redis 7), nil when unknown.
    public var entriesAdded: Int64?
    /// Entries in the stream now.
    public var length: Int64
    /// Which of the ids this daemon remembers (its cursor, its last published entry) are not in
    /// the stream (`XRANGE id id`).
    public var missing: Set<FleetStreamID>

    public init(
        epoch: String, firstID: FleetStreamID?, lastGeneratedID: FleetStreamID?, entriesAdded: Int64?, length: Int64,
        missing: Set<FleetStreamID> = []
    ) {
        self.epoch = epoch
        self.firstID = firstID
        self.lastGeneratedID = lastGeneratedID
        self.entriesAdded = entriesAdded
        self.length = length
        self.missing = missing
    }

    /// Whether an entry that was in the stream is gone without trimming explaining it: trimming
    /// only removes entries older than the oldest one left.
    func lost(_ id: FleetStreamID) -> Bool {
        guard id != .zero else { return false }
        if (lastGeneratedID ?? .zero) < id { return true }
        guard missing.contains(id) else { return false }
        guard let first = firstID else { return true }
        return id >= first
    }
}

/// How to get in sync with the fleet after (re)connecting.
public enum FleetSyncPlan: Sendable, Equatable {
    /// Read the stream after this id.
    case tail(after: FleetStreamID)
    /// Read the whole snapshot, then the stream after the last id generated before the read.
    case catchUp(FleetSyncReason)
    /// Redis lost changes this daemon may hold: publish every register again (with its own
    /// version, so nothing newer is overwritten anywhere), then catch up from the snapshot.
    case republishAndCatchUp(FleetSyncReason)
}

/// Why a daemon cannot simply go on reading the stream.
public enum FleetSyncReason: String, Sendable, Equatable {
    /// It has never synchronised (no cursor).
    case firstStart = "first-start"
    /// Entries after its cursor were trimmed from the stream (it was away too long).
    case trimmedPastCursor = "trimmed-past-cursor"
    /// The dataset is not the one it read from: Redis restarted empty, or is another server.
    case epochChanged = "epoch-changed"
    /// Entries this daemon read or published are gone: Redis restarted from an older save.
    case rolledBack = "rolled-back"
}

/// The rules for choosing a `FleetSyncPlan`; no I/O.
public enum FleetSyncPlanner {
    /// `lastPublishedID` is the id of the newest entry this daemon itself added (stored when the
    /// outbox is acknowledged): if Redis lost it, changes this daemon took out of its outbox are
    /// gone from the fleet and must be published again.
    public static func plan(
        cursor: FleetCursor?, lastPublishedID: FleetStreamID?, observed: FleetStreamObservation
    ) -> FleetSyncPlan {
        guard let cursor else { return .catchUp(.firstStart) }
        guard cursor.epoch == observed.epoch else { return .republishAndCatchUp(.epochChanged) }
        // Redis never reuses an id, and trimming only removes the oldest entries: an entry that
        // this daemon applied or published and that is gone otherwise was lost with a rollback.
        if observed.lost(cursor.lastID) || observed.lost(lastPublishedID ?? .zero) {
            return .republishAndCatchUp(.rolledBack)
        }
        let lastGenerated = observed.lastGeneratedID ?? .zero
        guard let first = observed.firstID else {
            // Empty: fine if nothing was generated after the cursor; otherwise those entries are gone.
            return lastGenerated == cursor.lastID ? .tail(after: cursor.lastID) : .catchUp(.trimmedPastCursor)
        }
        // Trimming removes the oldest entries only: if the oldest left is not after the cursor,
        // everything after the cursor is still there.
        if first <= cursor.lastID { return .tail(after: cursor.lastID) }
        // The oldest left is after the cursor. Nothing is missing only if nothing was ever removed.
        if let added = observed.entriesAdded, added == observed.length { return .tail(after: cursor.lastID) }
        return .catchUp(.trimmedPastCursor)
    }
}
