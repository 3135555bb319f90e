/// What the fleet tier keeps in the local store beside the cookie jars, as read at startup.
public struct FleetStoredState: Sendable, Equatable {
    /// The last-writer-wins register of every shared cookie this daemon has seen (tombstones
    /// included: a register with `deleted` set).
    public var registers: [FleetCookieAddress: FleetCookieReplica.Register]
    /// Local changes not yet taken by the fleet, oldest first.
    public var outbox: [FleetOutboxEntry]
    /// How far the fleet's changes are applied here; nil before the first synchronisation.
    public var cursor: FleetCursor?
    /// The newest change stream entry this daemon published.
    public var lastPublishedID: FleetStreamID?
    /// The shared jars whose cookies were already handed to the fleet once (`FleetStoreWrite.seeded`).
    public var seededJars: Set<String>

    public init(
        registers: [FleetCookieAddress: FleetCookieReplica.Register] = [:], outbox: [FleetOutboxEntry] = [],
        cursor: FleetCursor? = nil, lastPublishedID: FleetStreamID? = nil, seededJars: Set<String> = []
    ) {
        self.registers = registers
        self.outbox = outbox
        self.cursor = cursor
        self.lastPublishedID = lastPublishedID
        self.seededJars = seededJars
    }
}

/// The fleet records a cookie batch carries into its transaction, so that they are stored, or
/// rolled back, together with the cookie changes they describe: a local change and its outbox
/// entry, a remote change and its register and the stream position it was read at.
public struct FleetStoreWrite: Sendable, Equatable {
    /// Registers to store (replacing any held for the address).
    public var registers: [FleetCookieAddress: FleetCookieReplica.Register]
    /// Registers to drop: purged tombstones, registers of cookies the jar lost.
    public var forgottenRegisters: [FleetCookieAddress]
    /// Outbox entries to add.
    public var outbox: [FleetOutboxEntry]
    /// The fleet took the outbox entries up to and including this sequence: delete them.
    public var acknowledgedThrough: Int64?
    /// The stream position to store.
    public var cursor: FleetCursor?
    /// The newest entry this daemon published, to store with the acknowledgement.
    public var lastPublishedID: FleetStreamID?
    /// Jars whose existing cookies this batch hands to the fleet (sharing was just enabled).
    public var seeded: [String]
    /// Jars no longer shared: they are seeded again if sharing is enabled again.
    public var unseeded: [String]

    public init(
        registers: [FleetCookieAddress: FleetCookieReplica.Register] = [:],
        forgottenRegisters: [FleetCookieAddress] = [],
        outbox: [FleetOutboxEntry] = [], acknowledgedThrough: Int64? = nil, cursor: FleetCursor? = nil,
        lastPublishedID: FleetStreamID? = nil, seeded: [String] = [], unseeded: [String] = []
    ) {
        self.registers = registers
        self.forgottenRegisters = forgottenRegisters
        self.outbox = outbox
        self.acknowledgedThrough = acknowledgedThrough
        self.cursor = cursor
        self.lastPublishedID = lastPublishedID
        self.seeded = seeded
        self.unseeded = unseeded
    }

    /// Nothing to store: every member as `init()` leaves it (checked member by member, as a
    /// comparison with `FleetStoreWrite()` built and compared the whole struct on every set).
    public var isEmpty: Bool {
        registers.isEmpty && forgottenRegisters.isEmpty && outbox.isEmpty && acknowledgedThrough == nil
            && cursor == nil && lastPublishedID == nil && seeded.isEmpty && unseeded.isEmpty
    }

    /// Applies this write to `state` (the in-memory store, and the reference for the others).
    public func apply(to state: inout FleetStoredState) {
        for address in forgottenRegisters { state.registers[address] = nil }
        for (address, register) in registers { state.registers[address] = register }
        if let acknowledgedThrough { state.outbox.removeAll { $0.sequence <= acknowledgedThrough } }
        state.outbox += outbox
        if let cursor { state.cursor = cursor }
        if let lastPublishedID { state.lastPublishedID = lastPublishedID }
        state.seededJars.subtract(unseeded)
        state.seededJars.formUnion(seeded)
    }
}

/// The fleet tier's part of the local store (every `JarStore` is one). Its writes travel in
/// `StateBatch.fleet`, so they commit in the cookie changes' transaction; this protocol reads them
/// back at startup.
///
/// Like a `JarStore`, it belongs to one thread at a time.
public protocol FleetStateStore: AnyObject {
    /// Everything the fleet stored, at startup.
    func loadFleetState() throws(StoreError) -> FleetStoredState

    /// This daemon's machine id: the stored one, or `make()`'s, stored now (made once, kept
    /// with the state for good).
    func fleetMachineID(orCreate make: () -> FleetMachineID) throws(StoreError) -> FleetMachineID
}
