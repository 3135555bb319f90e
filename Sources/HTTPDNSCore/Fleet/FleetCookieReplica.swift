import HTTPDNSProtocol

/// This daemon's view of the shared jars' replication state: for every shared cookie it has
/// seen, the version of the change that produced its current state (a last-writer-wins
/// register). Changes, local or remote, go through it, so every daemon applying the same set
/// of changes in any order, any number of times, ends with the same jars.
///
/// No I/O and no clock: callers pass the time. The wiring keeps the registers in the local
/// store beside the cookies (and the tombstones beside them) so they survive restarts.
public struct FleetCookieReplica: Sendable {
    /// How long a deletion is remembered: a change older than that no longer finds the
    /// tombstone that should beat it, so changes older than the horizon are not applied (a
    /// deleted login must not come back). Thirty days: far beyond any outage the stream or the
    /// snapshot is expected to bridge.
    public static let defaultTombstoneLifetimeMs: Int64 = 30 * 86_400_000

    /// The state one change left for one cookie.
    public struct Register: Sendable, Equatable {
        public var version: FleetVersion
        /// The change was a deletion (a tombstone).
        public var deleted: Bool

        public init(version: FleetVersion, deleted: Bool) {
            self.version = version
            self.deleted = deleted
        }
    }

    /// Why a remote change changes nothing here.
    public enum Ignored: Sendable, Equatable {
        /// The register already holds exactly this version (a duplicate delivery, or this
        /// daemon's own change coming back through the stream).
        case duplicate
        /// The register holds a later version: the change lost.
        case superseded
        /// Older than the tombstone horizon, with nothing to compare against.
        case beyondHorizon
    }

    /// What a remote change does to the local jar.
    public enum Outcome: Sendable, Equatable {
        /// Store the cookie (replacing any with its key).
        case store(FleetCookieAddress, FleetCookieValue)
        /// Remove the cookie with this key, if present.
        case remove(FleetCookieAddress)
        /// Nothing to do.
        case ignored(Ignored)
    }

    public let machine: FleetMachineID
    public let tombstoneLifetimeMs: Int64
    public private(set) var registers: [FleetCookieAddress: Register]

    public init(
        machine: FleetMachineID, tombstoneLifetimeMs: Int64 = defaultTombstoneLifetimeMs,
        registers: [FleetCookieAddress: Register] = [:]
    ) {
        self.machine = machine
        self.tombstoneLifetimeMs = tombstoneLifetimeMs
        self.registers = registers
    }

    // MARK: local changes

    /// Records a change the local jar of a shared user just made, and returns the record to
    /// put in the outbox (in the same transaction as the change).
    ///
    /// The version is this machine's clock, but always later than the version already held for
    /// the cookie: a remote change stamped by a clock running ahead must not beat a change made
    /// here after it arrived, or this jar (which already applied the local change) would differ
    /// from every other.
    public mutating func recordLocal(_ change: CookieChange, jar: String, nowMs: Int64) -> FleetCookieChange {
        let key: CookieKey
        let content: FleetCookieChange.Content
        switch change {
        case .upsert(let cookie):
            key = cookie.key
            content = .set(FleetCookieValue(cookie))
        case .delete(let deleted):
            key = deleted
            content = .deleted
        }
        let address = FleetCookieAddress(jar: jar, key: key)
        var time = max(0, nowMs)
        if let held = registers[address]?.version, held.updatedAtMs >= time { time = held.updatedAtMs + 1 }
        let version = FleetVersion(updatedAtMs: time, machine: machine)
        registers[address] = Register(version: version, deleted: content == .deleted)
        return FleetCookieChange(address: address, version: version, content: content)
    }

    /// The record to publish for an outbox entry, or nil when a later change (local or remote)
    /// has superseded it, so it need not travel at all. An entry that waited past the
    /// tombstone horizon (a long outage) is published as a change made now: receivers would
    /// drop it as too old, and this jar still holds its result.
    public mutating func prepareForPublishing(_ change: FleetCookieChange, nowMs: Int64) -> FleetCookieChange? {
        guard let held = registers[change.address], held.version == change.version else { return nil }
        guard change.version.updatedAtMs < nowMs - tombstoneLifetimeMs else { return change }
        let version = FleetVersion(updatedAtMs: nowMs, machine: machine)
        registers[change.address] = Register(version: version, deleted: held.deleted)
        return FleetCookieChange(address: change.address, version: version, content: change.content)
    }

    // MARK: remote changes

    /// Applies a change from the fleet (stream or snapshot): it wins when its version is later
    /// than the register's. Applying the same change again is a no-op.
    public mutating func applyRemote(_ change: FleetCookieChange, nowMs: Int64) -> Outcome {
        if let held = registers[change.address] {
            if held.version == change.version { return .ignored(.duplicate) }
            if held.version > change.version { return .ignored(.superseded) }
        } else if change.version.updatedAtMs < nowMs - tombstoneLifetimeMs {
            return .ignored(.beyondHorizon)
        }
        switch change.content {
        case .deleted:
            registers[change.address] = Register(version: change.version, deleted: true)
            return .remove(change.address)
        case .set(let value):
            // An already expired cookie deletes, as a Set-Cookie with a past date does, and is
            // remembered as a tombstone: no jar holds it any more.
            if let expires = value.expires, expires * 1_000 <= nowMs {
                registers[change.address] = Register(version: change.version, deleted: true)
                return .remove(change.address)
            }
            registers[change.address] = Register(version: change.version, deleted: false)
            return .store(change.address, value)
        }
    }

    /// Puts a register back after the local transaction that changed it failed, unless a later
    /// change replaced it meanwhile (`expected` is the version the failed change set).
    public mutating func restore(_ address: FleetCookieAddress, to previous: Register?, ifStill expected: FleetVersion)
    {
        guard registers[address]?.version == expected else { return }
        registers[address] = previous
    }

    /// Forgets the registers of cookies the local jar no longer holds although no replicated
    /// change removed them (expiry, or the purge of session cookies after a reboot), so the
    /// fleet's copy of them applies again when it is read; returns the forgotten addresses.
    public mutating func forgetMissing(where isMissing: (FleetCookieAddress) -> Bool) -> [FleetCookieAddress] {
        let missing = registers.filter { !$0.value.deleted && isMissing($0.key) }.map(\.key)
        for address in missing { registers[address] = nil }
        return missing
    }

    /// Catching up from a complete snapshot: every change in it is applied as above; then every
    /// live cookie this daemon holds that the snapshot does not know was deleted while this
    /// daemon was away (its tombstone already purged), unless it is a local change still
    /// waiting in the outbox (`pending`), and is removed too.
    public mutating func applySnapshot(
        _ changes: [FleetCookieChange], pending: Set<FleetCookieAddress>, nowMs: Int64
    ) -> [Outcome] {
        var outcomes: [Outcome] = []
        var seen = Set<FleetCookieAddress>()
        for change in changes {
            seen.insert(change.address)
            outcomes.append(applyRemote(change, nowMs: nowMs))
        }
        for (address, register) in registers where !register.deleted && !seen.contains(address) {
            guard !pending.contains(address) else { continue }
            registers[address] = nil
            outcomes.append(.remove(address))
        }
        return outcomes
    }

    /// Every register as a change record, for republishing after Redis lost its data; the
    /// cookies' current values come from the jar. A live register whose cookie the jar no
    /// longer holds (it expired here, and its expiry travels with it) is left out: republishing
    /// it as deleted at the version of the change that set it would be a second, different
    /// record with one version.
    public func republishable(value: (FleetCookieAddress) -> FleetCookieValue?) -> [FleetCookieChange] {
        registers.compactMap { address, register in
            if register.deleted {
                return FleetCookieChange(address: address, version: register.version, content: .deleted)
            }
            guard let current = value(address) else { return nil }
            return FleetCookieChange(address: address, version: register.version, content: .set(current))
        }
    }

    /// Forgets tombstones past the horizon; returns them so the store can drop them too.
    public mutating func purgeTombstones(nowMs: Int64) -> [FleetCookieAddress] {
        let horizon = nowMs - tombstoneLifetimeMs
        let expired = registers.filter { $0.value.deleted && $0.value.version.updatedAtMs < horizon }.map(\.key)
        for address in expired { registers[address] = nil }
        return expired
    }
}
