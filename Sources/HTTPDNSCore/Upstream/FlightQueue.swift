/// Who an upstream query ("flight") is run for: a user, by uid, or the daemon itself
/// (`Prefetch=`, which is bounded by the configuration).
public enum FlightOwner: Hashable, Sendable {
    case user(UInt32)
    case daemon
}

/// The bounds of upstream work.
public struct FlightLimits: Sendable, Equatable {
    /// Flights queued or running that users started (`MaxUpstreamQueries=`).
    public var maxTotal: Int
    /// Flights queued or running that one uid started (`MaxUpstreamQueriesPerUser=`).
    public var maxPerUser: Int
    /// Worker threads that run flights.
    public var workers: Int
    /// Workers one owner's flights may hold at once: a uid whose names hang keeps the rest free
    /// for everyone else's cache misses.
    public var workersPerOwner: Int
    /// Flights each uid may start past `maxTotal`: however many others hold the total, a uid
    /// that asks still gets these (at most `maxTotal` plus this many per uid in all; an eighth
    /// of `maxPerUser` at most).
    public var reservedPerUser: Int
    /// Workers beyond `workers`, each for an owner with no flight running: when the others hold
    /// every regular worker with names that hang, a new owner's flight still starts at once.
    public var reserveWorkers: Int

    public init(
        maxTotal: Int = 1_024, maxPerUser: Int = 64, workers: Int = 16, workersPerOwner: Int = 4,
        reservedPerUser: Int = 8, reserveWorkers: Int = 8
    ) {
        precondition(maxTotal > 0 && maxPerUser > 0 && workers > 0 && workersPerOwner > 0, "limits must be positive")
        self.maxTotal = maxTotal
        self.maxPerUser = maxPerUser
        self.workers = workers
        self.workersPerOwner = min(workersPerOwner, workers)
        // An eighth of the per-uid cap at most, so the total still bounds what few uids hold.
        self.reservedPerUser = max(0, min(reservedPerUser, max(1, maxPerUser / 8)))
        self.reserveWorkers = max(0, reserveWorkers)
    }

    /// Threads the queue may keep busy at once.
    public var threads: Int { workers + reserveWorkers }
}

/// Flights waiting for a worker thread or running on one: capped per uid and in total (past the
/// total, each uid still has `reservedPerUser`), and started in turn, one owner after another,
/// with at most `workersPerOwner` running per owner; once every regular worker is busy, the
/// reserve ones start only the flights of owners with none running.
///
/// A flight counts against the uid that started it until it ends. Another owner waiting for the
/// same answer "sponsors" it: the flight also waits in that owner's queue (without counting
/// against its cap) and starts at whichever turn comes first, so nobody waits behind the queue
/// of whoever asked first. A running flight holds a worker of the owner whose turn started it.
/// No I/O and no clock: the owner of the instance calls `next()` whenever a worker may be free.
public struct FlightQueue<ID: Hashable> {
    /// Why a flight was not admitted.
    public enum Refusal: Equatable, Sendable {
        /// `maxPerUser` flights of this uid are queued or running.
        case perUser(limit: Int)
        /// `maxTotal` flights of users are queued or running.
        case total(limit: Int)
    }

    private struct Entry {
        var starter: FlightOwner
        var sponsors: [FlightOwner]
        /// Whose worker share it runs on; nil while queued.
        var runner: FlightOwner?
    }

    /// The caps; a reload may change them: flights already admitted keep their place, and new
    /// ones meet the new caps.
    public var limits: FlightLimits
    private var entries: [ID: Entry] = [:]
    private var startedBy: [UInt32: Int] = [:]
    private var startedByUsers = 0
    private var runningBy: [FlightOwner: Int] = [:]
    /// Flights on a worker now.
    public private(set) var running = 0
    private var queues: [FlightOwner: [ID]] = [:]
    /// Owners with queued flights, in turn order; `turn` is the next one to look at.
    private var ring: [FlightOwner] = []
    private var turn = 0

    public init(limits: FlightLimits = FlightLimits()) {
        self.limits = limits
    }

    /// Flights queued or running.
    public var count: Int { entries.count }

    /// Flights queued or running that `uid` started.
    public func count(uid: UInt32) -> Int { startedBy[uid] ?? 0 }

    /// Whether `id` waits for a worker.
    public func isQueued(_ id: ID) -> Bool {
        guard let entry = entries[id] else { return false }
        return entry.runner == nil
    }

    /// Queues a new flight for `owner`, or says which cap it is over. The daemon's own flights
    /// are not capped.
    public mutating func admit(_ id: ID, owner: FlightOwner) -> Refusal? {
        precondition(entries[id] == nil, "a flight is admitted once")
        if case .user(let uid) = owner {
            if count(uid: uid) >= limits.maxPerUser { return .perUser(limit: limits.maxPerUser) }
            if startedByUsers >= limits.maxTotal && count(uid: uid) >= limits.reservedPerUser {
                return .total(limit: limits.maxTotal)
            }
            startedBy[uid, default: 0] += 1
            startedByUsers += 1
        }
        entries[id] = Entry(starter: owner, sponsors: [owner], runner: nil)
        enqueue(id, for: owner)
        return nil
    }

    /// `owner` waits for the queued flight `id` too: it may start at `owner`'s turn.
    public mutating func sponsor(_ id: ID, by owner: FlightOwner) {
        guard var entry = entries[id], entry.runner == nil, !entry.sponsors.contains(owner) else { return }
        entry.sponsors.append(owner)
        entries[id] = entry
        enqueue(id, for: owner)
    }

    /// Drops a queued flight nobody waits for any more (a running one ends with `finish`).
    public mutating func cancel(_ id: ID) {
        guard let entry = entries[id], entry.runner == nil else { return }
        dequeue(id, from: entry.sponsors)
        release(entry.starter)
        entries[id] = nil
    }

    /// The flight to start on a free worker now, if any: the first queued flight of the next owner
    /// in turn that is under its worker share.
    public mutating func next() -> ID? {
        guard running < limits.threads else { return nil }
        let onReserve = running >= limits.workers
        var looked = 0
        while looked < ring.count {
            if turn >= ring.count { turn = 0 }
            let owner = ring[turn]
            let busy = runningBy[owner, default: 0]
            if busy < (onReserve ? 1 : limits.workersPerOwner), let id = queues[owner]?.first,
                var entry = entries[id]
            {
                turn += 1
                dequeue(id, from: entry.sponsors)
                entry.runner = owner
                entries[id] = entry
                runningBy[owner, default: 0] += 1
                running += 1
                return id
            }
            turn += 1
            looked += 1
        }
        return nil
    }

    /// A running flight ended: its worker and its place under its starter's cap are free.
    public mutating func finish(_ id: ID) {
        guard let entry = entries[id], let runner = entry.runner else { return }
        let left = runningBy[runner, default: 1] - 1
        runningBy[runner] = left > 0 ? left : nil
        running -= 1
        release(entry.starter)
        entries[id] = nil
    }

    private mutating func release(_ starter: FlightOwner) {
        guard case .user(let uid) = starter else { return }
        let left = count(uid: uid) - 1
        startedBy[uid] = left > 0 ? left : nil
        startedByUsers -= 1
    }

    private mutating func enqueue(_ id: ID, for owner: FlightOwner) {
        if queues[owner] == nil {
            queues[owner] = []
            ring.append(owner)
        }
        queues[owner]?.append(id)
    }

    private mutating func dequeue(_ id: ID, from owners: [FlightOwner]) {
        for owner in owners {
            guard var queue = queues[owner], let index = queue.firstIndex(of: id) else { continue }
            queue.remove(at: index)
            if !queue.isEmpty {
                queues[owner] = queue
                continue
            }
            queues[owner] = nil
            if let position = ring.firstIndex(of: owner) {
                ring.remove(at: position)
                if position < turn { turn -= 1 }
            }
        }
    }
}
