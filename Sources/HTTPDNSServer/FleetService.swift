import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// The fleet tier in the daemon (`[Fleet]`): the Redis client the resolver asks on a cache miss,
/// and the replication of the jars of the users in `ShareCookiesOf=`. Lives on the loop thread.
///
/// Every fleet record reaches the store through the cookie group commit, in the order the loop
/// made it, so the store always mirrors memory: a shared jar's local change with its outbox
/// entry, a remote change with its register and the stream position, an acknowledgement with
/// the newest published entry.
final class FleetService {
    /// How often tombstones past their lifetime are forgotten, here and in the snapshot.
    static let tombstonePurgeIntervalMilliseconds: Int64 = 3_600_000

    let client: FleetClient
    /// `ShareCache=`: the resolver asks the fleet on a miss and publishes what it fetched.
    let sharesCache: Bool
    /// uid -> the shared jar's fleet-wide name.
    let sharedJars: [UInt32: String]
    private let uidsByJar: [String: UInt32]
    private let machine: FleetMachineID
    private var stored: FleetStoredState
    private let outbox: InMemoryFleetOutbox
    private var replicator: FleetCookieReplicator?
    private let cookies: CookieService
    private let persistence: any StatePersistence
    private let loop: EventLoop
    private let logger: Logger
    private var purgeTimer: EventLoop.TimerID?

    init(
        setup: FleetSetup, machine: FleetMachineID, stored: FleetStoredState, cookies: CookieService,
        persistence: any StatePersistence, loop: EventLoop, logger: Logger
    ) {
        client = FleetClient(options: setup.clientOptions, key: setup.key, loop: loop) { line in
            // One cause per kind of line (its opening words name the condition): a flapping Redis
            // cannot flood the log, and "unreachable" never hides "back".
            logger.log(line.priority.loggerPriority, line.message, cause: String(line.message.prefix(20)))
        }
        sharesCache = setup.shareCache
        sharedJars = setup.sharedJars
        uidsByJar = Dictionary(setup.sharedJars.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        self.machine = machine
        self.stored = stored
        outbox = InMemoryFleetOutbox(entries: stored.outbox)
        self.cookies = cookies
        self.persistence = persistence
        self.loop = loop
        self.logger = logger
    }

    /// Hands newly shared jars to the fleet, then follows the fleet's changes and publishes the
    /// outbox. Without shared users there is nothing to replicate: only the cache is shared.
    func start() {
        guard !sharedJars.isEmpty else { return }
        let now = loop.clock.wallSeconds()
        var replica = FleetCookieReplica(machine: machine, registers: stored.registers)
        var startup = FleetStoreWrite()
        var cursor = stored.cursor
        // Cookies a shared jar lost without a replicated change (expired here; session cookies
        // ended by a reboot): their registers go, and the stream is read again from its start
        // (or the snapshot), so the fleet's copies come back where they are still alive.
        let forgotten = replica.forgetMissing { address in
            guard let uid = uidsByJar[address.jar] else { return false }
            return cookies.cookie(uid: uid, key: address.key, now: now) == nil
        }
        startup.forgottenRegisters = forgotten
        if !forgotten.isEmpty, let position = cursor {
            cursor = FleetCursor(epoch: position.epoch, lastID: .zero)
            startup.cursor = cursor
            logger.info(
                "fleet: \(forgotten.count) shared cookie(s) gone since the last run; reading the fleet's copies again")
        }
        startup.unseeded = stored.seededJars.filter { uidsByJar[$0] == nil }.sorted()
        let replicator = FleetCookieReplicator(client: client, replica: replica, outbox: outbox, delegate: self)
        self.replicator = replicator
        if !startup.isEmpty { commit(startup) }
        // A user whose sharing was just enabled: their existing cookies become local changes.
        for (uid, jar) in sharedJars.sorted(by: { $0.key < $1.key }) where !stored.seededJars.contains(jar) {
            let existing = cookies.allCookies(uid: uid, now: now)
            let seeding = replicator.recordLocal(existing.map(CookieChange.upsert), jar: jar)
            var write = seeding.storeWrite
            write.seeded = [jar]
            if !existing.isEmpty { logger.info("fleet: sharing \(existing.count) existing cookie(s) of uid \(uid)") }
            commit(write) { [weak self] succeeded in
                if succeeded {
                    self?.replicator?.localCommitted(seeding)
                } else {
                    self?.replicator?.localCommitFailed(seeding)
                }
            }
        }
        replicator.start(cursor: cursor, lastPublishedID: stored.lastPublishedID)
        stored = FleetStoredState()
        schedulePurge()
    }

    func shutdown() {
        if let purgeTimer { loop.cancel(purgeTimer) }
        client.shutdown()
    }

    /// `status.fleet`.
    var status: FleetStatus { client.status(outbox: outbox.count) }

    private func schedulePurge() {
        purgeTimer = loop.schedule(afterMilliseconds: Self.tombstonePurgeIntervalMilliseconds) { [weak self] in
            self?.replicator?.purgeTombstones()
            self?.schedulePurge()
        }
    }

    /// Commits fleet records (with the changes they made to `uid`'s jar, if any) through the group
    /// commit; `done` learns whether they were stored.
    private func commit(
        _ write: FleetStoreWrite, uid: UInt32 = 0, changes: [CookieChange] = [],
        done: @escaping (Bool) -> Void = { _ in }
    ) {
        let batch =
            changes.isEmpty ? StateBatch(fleetRecords: write) : StateBatch(uid: uid, changes: changes, fleet: write)
        persistence.commit(batch) { [weak self] result in
            switch result {
            case .success:
                done(true)
            case .failure(let failure):
                self?.logger.error("fleet: failed to store replication state: \(failure.error)")
                if !changes.isEmpty { self?.cookies.restore(uid: uid, committed: failure.committedJar) }
                done(false)
            }
        }
    }
}

extension FleetService: CookieReplication {
    func recordLocal(_ changes: CookieJarChanges, uid: UInt32) -> FleetLocalChanges? {
        guard let jar = sharedJars[uid], let replicator else { return nil }
        return replicator.recordLocal(changes.deliberate, jar: jar)
    }

    func localCommitted(_ changes: FleetLocalChanges) { replicator?.localCommitted(changes) }

    func localCommitFailed(_ changes: FleetLocalChanges) { replicator?.localCommitFailed(changes) }
}

extension FleetService: FleetReplicatorDelegate {
    /// Remote changes go to the shared jars (memory, without becoming local changes) and to the
    /// store with their registers. The stream position is stored with them when they touch one
    /// jar; with several jars (several batches), only once all of them are stored, so that a
    /// failed batch is read again after a restart (applying a change twice changes nothing).
    func fleetApply(_ outcomes: [FleetCookieReplica.Outcome], cursor: FleetCursor) {
        guard let replicator else { return }
        let now = loop.clock.wallSeconds()
        var batches: [UInt32: JarBatch] = [:]
        for outcome in outcomes {
            let address: FleetCookieAddress
            switch outcome {
            case .store(let stored, _): address = stored
            case .remove(let removed): address = removed
            case .ignored: continue
            }
            // A jar no user here shares: nothing local to change.
            guard let uid = uidsByJar[address.jar] else { continue }
            var batch = batches[uid] ?? JarBatch()
            batch.changes += cookies.applyRemote(uid: uid, outcome, now: now)
            if let register = replicator.replica.registers[address] {
                batch.write.registers[address] = register
            } else {
                batch.write.forgottenRegisters.append(address)
            }
            batches[uid] = batch
        }
        guard batches.count > 1 else {
            let uid = batches.first?.key ?? 0
            var batch = batches.first?.value ?? JarBatch()
            batch.write.cursor = cursor
            commit(batch.write, uid: uid, changes: batch.changes)
            return
        }
        var left = batches.count
        var allStored = true
        for (uid, batch) in batches {
            commit(batch.write, uid: uid, changes: batch.changes) { [weak self] stored in
                allStored = allStored && stored
                left -= 1
                if left == 0, allStored { self?.commit(FleetStoreWrite(cursor: cursor)) }
            }
        }
    }

    /// One shared jar's part of the remote changes.
    private struct JarBatch {
        var changes: [CookieChange] = []
        var write = FleetStoreWrite()
    }

    func fleetCurrentValue(of address: FleetCookieAddress) -> FleetCookieValue? {
        guard let uid = uidsByJar[address.jar] else { return nil }
        return cookies.cookie(uid: uid, key: address.key, now: loop.clock.wallSeconds()).map(FleetCookieValue.init)
    }

    func fleetAcknowledged(through sequence: Int64, published: FleetStreamID?) {
        commit(FleetStoreWrite(acknowledgedThrough: sequence, lastPublishedID: published))
    }

    func fleetForget(_ addresses: [FleetCookieAddress]) {
        commit(FleetStoreWrite(forgottenRegisters: addresses))
    }
}

@available(*, unavailable)
extension FleetService: Sendable {}

extension FleetLogLine.Priority {
    /// The daemon log's priority for a fleet log line.
    var loggerPriority: Logger.Priority {
        switch self {
        case .error: return .error
        case .warning: return .warning
        case .notice: return .notice
        }
    }
}
