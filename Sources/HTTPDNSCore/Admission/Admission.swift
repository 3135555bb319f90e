import HTTPDNSProtocol

/// Who may connect, read, run and hold what: every bound the daemon keeps against its clients,
/// per connection, per account (a uid with its subordinate uids) and daemon-wide, as a machine
/// with no I/O (swift-nio's style: events in, decisions out). `RPCServer` and `Connection` tell
/// it what happened (a peer connects, bytes were read or are held, a request arrives, is answered,
/// a turn ends; the time, when deadlines are checked) and do what it answers: run now, wait (for
/// the next turn, for output to drain, for memory), refuse (with the -32003 `data.what` and
/// `data.limit` of httpdnsd-rpc(7), ERRORS) or close.
///
/// Questions about a connection are `mutating`: asking may change what it holds (the refilled
/// share of a new turn, the right to finish its line past the memory bound), and the server's
/// copy is asked in place.
///
/// The bounds, and the tests that hold them (`AdmissionTests` on this machine; in-process on the
/// manual clock: `InProcessServerTests`, `ConnectionBudgetTests`; against the real daemon:
/// `ClientBoundsTests`, `AttackBoundsTests` with `Tests/attack/attacker.py`):
/// - accepts per turn (`acceptsPerTurn`; the rest wait in the backlog), each charged
///   `WorkCost.admission` to the connecting account: `aConnectAndCloseStormGetsABoundedNumberOf
///   AcceptsPerTurn`, `admissionsAreChargedToTheUidThatConnects`, `aConnectAndCloseStormCannot
///   HoldTheLoop`;
/// - connections, daemon-wide with a reserve per account (`maxConnections`,
///   `reservedConnectionsPerUser`: "connections") and per account (`maxConnectionsPerUser`:
///   "connections of one user"), refused with one error line: `aFullTotalLeavesEachOtherUser
///   ItsReserve`, `subordinateUidsAreChargedToTheirOwner`, `SubordinateUIDSocketTests`;
/// - work per turn, per connection (`workPerTurn`) and per account (`workPerTurnPerUser`), by
///   `WorkCost`; spent, the connection waits for the next turn: `aTurnRunsABudgetOfRequests…`,
///   `ConnectionBudgetTests` (batches, costly methods, large answers, cookie sets, exports, one
///   budget per user), `batchesOfCostlyNotificationsCannotFreezeTheLoop`,
///   `storingIntoAFullJarCannotFreezeTheLoop`;
/// - requests in flight, per connection and per account (`maxRequestsInFlight*`: "requests in
///   flight on one connection", "… of one user"; a notification past them is dropped):
///   `requestsInFlight…AreCapped`, `notificationsCountAgainstTheInFlightCap(s)`;
/// - unsent output, per connection (`maxPendingOutput`) and per account
///   (`maxPendingOutputPerUser`): no request runs past them until it drains; a batch element that
///   would wait is refused ("output waiting for the client"); past twice the account's cap its
///   largest holders are closed: `outputOverTheCapStopsRequestsUntilTheClientReads`,
///   `outputOfOneUserIsCappedAcrossItsConnections`, `aBatchOfLargeAnswersIsCapped`,
///   `largeAnswersThatAreNeverReadStayBounded`, `largeAnswersNeverReadHoldLittle`;
/// - memory by capacity, per account (`memoryBoundPerUser`) and daemon-wide (`memoryBound`, past
///   which the accounts holding an equal share or more stop): neither reads nor requests until
///   some is released, one connection per account finishing its line; a batch element that would
///   wait holding answers is refused ("memory of one user"): `readingStopsAtTheUsersMemoryBound…`,
///   `unfinishedLinesPastTheBoundAreFinishedOneAtATime`, `inputIsChargedByCapacityAndGivenBack`,
///   `halfLinesAreBoundedAndDoNotPreventIdleExit`, `blankLinesLeaveNoCapacityBehind`;
/// - deadlines (`idleTimeoutMilliseconds`: closed; `lineTimeoutMilliseconds`: -32600 "line not
///   completed", closed): `anIdleConnectionIsClosed…`, `anUnfinishedLine…`.
///
/// The line length and the batch size are the framer's and the decoder's (`LineFramer`,
/// `RPCDecoder`); the pause after EMFILE is the listener's.
public struct Admission {
    public private(set) var limits: ServerLimits
    /// Counts loop turns: work credit is per turn.
    public private(set) var turn: UInt64 = 1
    /// Memory all connections hold (see `UserLoad.memory`).
    public private(set) var memory = 0
    /// Connections open.
    public private(set) var connectionCount = 0
    private var accounts: [UInt32: UserLoad] = [:]
    private var acceptsThisTurn = 0
    /// Accounts whose unsent output went past twice their cap this turn.
    private var overloaded: [UserLoad] = []
    /// Connections (by id) stopped because their account (or everyone) holds too much memory.
    private var memoryWaiters: [UInt64] = []
    /// Memory was released this turn: the waiters are looked at when it ends.
    private var memoryReleased = false

    public init(limits: ServerLimits) { self.limits = limits }

    /// Accounts with a connection or a request in flight.
    public var accountCount: Int { accounts.count }

    /// What one account holds (nil once it has no connection and nothing in flight).
    public func load(of account: UInt32) -> UserLoad? { accounts[account] }

    /// A reloaded configuration's limits: new connections and requests meet them at once, open
    /// connections at their next line.
    public mutating func apply(_ limits: ServerLimits) { self.limits = limits }

    // MARK: accepting

    /// Whether the listener may take another connection this turn (each call is one accept).
    public mutating func mayAccept() -> Bool {
        guard acceptsThisTurn < limits.acceptsPerTurn else { return false }
        acceptsThisTurn += 1
        return true
    }

    /// What becomes of a peer that connected.
    public enum Arrival {
        /// Open it (then `opened`).
        case admit(UserLoad)
        /// Tell it why in one line, then close.
        case refuse(RPCError)
    }

    /// A peer of `account` connected. Admitting (or refusing) is work that account caused: it
    /// spends its share of the turn, so its own connections run less while it storms.
    public mutating func arrives(account: UInt32) -> Arrival {
        let user = accounts[account] ?? UserLoad(uid: account)
        user.shareOfTurn.charge(WorkCost.admission, turn: turn, perTurn: limits.workPerTurnPerUser)
        if connectionCount >= limits.maxConnections
            && user.connections >= min(limits.reservedConnectionsPerUser, limits.maxConnectionsPerUser)
        {
            return .refuse(.limitExceeded("connections", limit: limits.maxConnections))
        }
        if user.connections >= limits.maxConnectionsPerUser {
            return .refuse(.limitExceeded("connections of one user", limit: limits.maxConnectionsPerUser))
        }
        return .admit(user)
    }

    /// The admitted connection is open (being watched): from now on it counts.
    public mutating func opened(id: UInt64, user: UserLoad) -> ConnectionBudget {
        accounts[user.uid] = user
        user.connections += 1
        connectionCount += 1
        return ConnectionBudget(id: id, user: user)
    }

    /// The connection closed (after it let go of its line and charged what it holds as nothing).
    public mutating func closed(_ connection: inout ConnectionBudget) {
        connectionCount -= 1
        connection.user.connections -= 1
        forgetIfUnused(connection.user)
    }

    private mutating func forgetIfUnused(_ user: UserLoad) {
        if user.isUnused && accounts[user.uid] === user { accounts[user.uid] = nil }
    }

    // MARK: work

    /// Charges work to the connection's and its account's shares of the turn.
    @inlinable
    public mutating func charge(_ connection: inout ConnectionBudget, _ units: Int) {
        connection.credit.charge(units, turn: turn, perTurn: limits.workPerTurn)
        connection.user.shareOfTurn.charge(units, turn: turn, perTurn: limits.workPerTurnPerUser)
    }

    /// Whether the connection and its account have work left this turn.
    @inlinable
    public mutating func hasCredit(_ connection: inout ConnectionBudget) -> Bool {
        connection.credit.isAvailable(turn: turn, perTurn: limits.workPerTurn)
            && connection.user.shareOfTurn.isAvailable(turn: turn, perTurn: limits.workPerTurnPerUser)
    }

    /// Whether a slice of `account`'s long work may run this turn (`SlicedWork`): an account with
    /// nothing open has its whole share.
    public func sliceMayRun(account: UInt32) -> Bool {
        (accounts[account] ?? UserLoad(uid: account)).shareOfTurn.isAvailable(
            turn: turn, perTurn: limits.workPerTurnPerUser)
    }

    /// A slice of `account`'s long work cost `units`.
    public func chargeSlice(account: UInt32, units: Int) {
        accounts[account]?.shareOfTurn.charge(units, turn: turn, perTurn: limits.workPerTurnPerUser)
    }

    // MARK: reading and running

    /// What the connection holds for its client, for the output caps.
    public struct HeldOutput {
        /// Answer bytes not taken by the socket, queued ones included.
        public var unsent: Int
        /// Answers wait to be written (behind, or in, a streamed one).
        public var answersQueued: Bool
        /// What the streamed answers queued behind the one being written, and the answers the
        /// connection's batches collected, hold.
        public var heldBehind: Int

        public init(unsent: Int, answersQueued: Bool, heldBehind: Int) {
            self.unsent = unsent
            self.answersQueued = answersQueued
            self.heldBehind = heldBehind
        }
    }

    /// Why the connection may not read now, if it may not: its account must release memory
    /// first, or the turn's work is spent.
    /// - Parameters:
    ///   - serving: its client is there (an abandoned connection only reads what the kernel
    ///     holds, and answers nobody: it never waits for memory).
    ///   - holdsInput: its input buffer holds part of a line.
    public mutating func reasonNotToRead(_ connection: inout ConnectionBudget, serving: Bool, holdsInput: Bool)
        -> AdmissionWait?
    {
        if mustWaitForMemory(&connection, serving: serving, holdsInput: holdsInput) { return .memory }
        return hasCredit(&connection) ? nil : .nextTurn
    }

    /// Why the connection's next request may not run now, if it may not: too much of its output
    /// (or its account's) waits, its account must release memory, or the turn's work is spent.
    public mutating func reasonToWait(
        _ connection: inout ConnectionBudget, output: HeldOutput, serving: Bool, holdsInput: Bool
    ) -> AdmissionWait? {
        if serving && outputOverCap(connection.user, output) { return .unsentOutput }
        if mustWaitForMemory(&connection, serving: serving, holdsInput: holdsInput) { return .memory }
        return hasCredit(&connection) ? nil : .nextTurn
    }

    /// Whether the next request must wait for output to drain: the connection's own is over its
    /// cap, or it has some while its account's is over the account's. A connection whose client
    /// has read everything always runs, so a sibling that never reads cannot starve it (siblings
    /// are closed when the account's output grows past twice its cap). Its own count includes
    /// what is held behind; its account's counts bytes only, so a large answer being streamed
    /// to a reader is never taken for a pile of unread ones.
    public func outputOverCap(_ user: UserLoad, _ output: HeldOutput) -> Bool {
        guard output.unsent > 0 || output.answersQueued else { return false }
        return output.unsent + output.heldBehind > limits.maxPendingOutput
            || (output.unsent > 0 && user.unsentOutput > limits.maxPendingOutputPerUser)
    }

    /// A request (or notification) arrives to run on the connection: it is in flight from now
    /// on, refused or not (its refusal is its answer); past the in-flight caps, the refusal.
    public mutating func requestArrives(_ connection: inout ConnectionBudget) -> RPCError? {
        var refusal: RPCError?
        if connection.inFlight >= limits.maxRequestsInFlight {
            refusal = .limitExceeded("requests in flight on one connection", limit: limits.maxRequestsInFlight)
        } else if connection.user.inFlight >= limits.maxRequestsInFlightPerUser {
            refusal = .limitExceeded("requests in flight of one user", limit: limits.maxRequestsInFlightPerUser)
        }
        inFlight(&connection)
        return refusal
    }

    /// A request in flight that no cap applies to (one naming no method: its error is its answer).
    public mutating func inFlight(_ connection: inout ConnectionBudget) {
        connection.inFlight += 1
        connection.user.inFlight += 1
    }

    /// A request was answered (or dropped): out of flight. Once the connection is closed its
    /// account may have nothing left.
    public mutating func answered(_ connection: inout ConnectionBudget, connectionClosed: Bool) {
        connection.inFlight -= 1
        connection.user.inFlight -= 1
        if connectionClosed { forgetIfUnused(connection.user) }
    }

    /// What a batch does with an element (past its first) that `reasonToWait` held back.
    public enum BatchElement: Equatable {
        /// Stop the batch here; it goes on when the wait clears.
        case wait(AdmissionWait)
        /// Answer the element with this error (drop a notification), and go on: the batch's own
        /// answers leave only with it, so waiting for them (output, or memory while the batch
        /// holds answers) would never end.
        case refuse(RPCError)
    }

    /// What a batch element that must wait for `wait` does.
    public func batchElement(waitingFor wait: AdmissionWait, batchHoldsAnswers: Bool) -> BatchElement {
        switch wait {
        case .unsentOutput:
            return .refuse(.limitExceeded("output waiting for the client", limit: limits.maxPendingOutput))
        case .memory where batchHoldsAnswers:
            return .refuse(.limitExceeded("memory of one user", limit: limits.memoryBoundPerUser))
        case .memory, .nextTurn:
            return .wait(wait)
        }
    }

    /// The refusal of a batch's request whose answer would take the answers its batch collected
    /// (`collected`) and the connection's unsent output past the output cap; nil: it runs.
    public func batchRequestRefusal(collected: Int, unsent: Int) -> RPCError? {
        guard collected + unsent > limits.maxPendingOutput else { return nil }
        return .limitExceeded("output waiting for the client", limit: limits.maxPendingOutput)
    }

    // MARK: memory and output

    /// Whether a connection of `user` must leave memory to others before it reads or runs more:
    /// its account is at its bound, or everyone's memory is at the total bound and its account
    /// holds at least an equal share of it.
    public func isOverMemory(_ user: UserLoad) -> Bool {
        user.memory >= limits.memoryBoundPerUser
            || (memory >= limits.memoryBound && user.memory * max(accounts.count, 1) >= memory)
    }

    /// What the connection holds now, memory by capacity and unsent output (its client's unread
    /// answers): its account's and the daemon's figures follow.
    public mutating func holds(_ connection: inout ConnectionBudget, memory held: Int, unsentOutput unsent: Int) {
        guard held != connection.chargedMemory || unsent != connection.chargedUnsentOutput else { return }
        let delta = held - connection.chargedMemory
        let unsentDelta = unsent - connection.chargedUnsentOutput
        connection.chargedMemory = held
        connection.chargedUnsentOutput = unsent
        let user = connection.user
        user.memory += delta
        memory += delta
        if delta < 0 && !memoryWaiters.isEmpty { memoryReleased = true }
        guard unsentDelta != 0 else { return }
        user.unsentOutput += unsentDelta
        if unsentDelta > 0 && user.unsentOutput > 2 * limits.maxPendingOutputPerUser
            && !overloaded.contains(where: { $0 === user })
        {
            overloaded.append(user)
        }
    }

    /// Whether the connection may go on past its account's memory bound to finish the line it
    /// holds (taking `UserLoad.finishingLine` if no other connection of the account has it):
    /// memory held by unfinished lines is only released by finishing them, so without it
    /// connections that each hold half a line would wait for each other. The bound is overshot
    /// by one line at most.
    public mutating func mayFinishItsLine(_ connection: inout ConnectionBudget, holdsInput: Bool) -> Bool {
        let user = connection.user
        if user.finishingLine == connection.id { return true }
        guard user.finishingLine == nil, holdsInput else { return false }
        user.finishingLine = connection.id
        return true
    }

    /// The connection finished (or dropped) the line it held: another connection of its account
    /// may finish one next, and memory may be available to waiters without a byte being freed.
    public mutating func lineFinished(_ connection: inout ConnectionBudget) {
        guard connection.user.finishingLine == connection.id else { return }
        connection.user.finishingLine = nil
        if !memoryWaiters.isEmpty { memoryReleased = true }
    }

    /// The connection waits until memory is released (see `memoryWaitEnds`).
    public mutating func waitForMemory(_ connection: inout ConnectionBudget) {
        guard !connection.waitsForMemory else { return }
        connection.waitsForMemory = true
        memoryWaiters.append(connection.id)
    }

    /// The connections (by id) to look at again at the end of a turn that released memory (none
    /// otherwise); each then asks `memoryWaitEnds`.
    public mutating func memoryWaitersToWake() -> [UInt64] {
        guard memoryReleased else { return [] }
        memoryReleased = false
        let waiting = memoryWaiters
        memoryWaiters.removeAll()
        return waiting
    }

    /// Whether the connection must wait for memory before it reads or runs more: its account is
    /// over the bounds and it may not finish its line. An abandoned connection (not `serving`)
    /// reads only what the kernel still holds and answers nobody: it is never held back.
    public mutating func mustWaitForMemory(_ connection: inout ConnectionBudget, serving: Bool, holdsInput: Bool)
        -> Bool
    {
        serving && isOverMemory(connection.user) && !mayFinishItsLine(&connection, holdsInput: holdsInput)
    }

    /// Whether a connection `memoryWaitersToWake` named may go on (then it is resumed); if not,
    /// it waits again.
    public mutating func memoryWaitEnds(_ connection: inout ConnectionBudget, holdsInput: Bool) -> Bool {
        connection.waitsForMemory = false
        guard isOverMemory(connection.user) && !mayFinishItsLine(&connection, holdsInput: holdsInput) else {
            return true
        }
        waitForMemory(&connection)
        return false
    }

    /// The accounts whose unsent output is past twice their cap: the server closes their
    /// connections holding the most, largest first, while `mustShed` says so.
    public mutating func accountsToShed() -> [UserLoad] {
        guard !overloaded.isEmpty else { return [] }
        let users = overloaded
        overloaded.removeAll()
        return users.filter { $0.unsentOutput > 2 * limits.maxPendingOutputPerUser }
    }

    /// Whether `user` still holds more unsent output than its cap (shedding goes on).
    public func mustShed(_ user: UserLoad) -> Bool { user.unsentOutput > limits.maxPendingOutputPerUser }

    // MARK: turns

    /// The turn ended: the next one brings a new share of work and of accepts.
    public mutating func turnEnded() {
        acceptsThisTurn = 0
        turn += 1
    }

    // MARK: deadlines

    /// How often connections are checked against the idle and line timeouts: a fraction of the
    /// shorter one, so a deadline is kept to within a quarter of it (and never worse than 1 s);
    /// 0: neither is set.
    public var sweepIntervalMilliseconds: Int64 {
        let timeouts = [limits.idleTimeoutMilliseconds, limits.lineTimeoutMilliseconds].filter { $0 > 0 }
        guard let shortest = timeouts.min() else { return 0 }
        return min(max(shortest / 4, 10), 1_000)
    }

    /// A deadline the connection missed.
    public enum Deadline: Equatable {
        /// Idle too long: close.
        case idle
        /// It held an unfinished line too long: answer this (id null) and close.
        case unfinishedLine(RPCError)
    }

    /// Whether a connection missed a deadline at `now`.
    /// - Parameters:
    ///   - lastActivity: when bytes last moved either way, or a request completed.
    ///   - unfinishedLineSince: since when its input holds an unfinished line while it is read.
    ///   - busy: a request is in flight, or a subscription writes on it (it is not idle).
    ///   - waitingForOutput: it waits for its client to read; it is not reading either, so its
    ///     line waits too.
    public func deadline(
        now: MonotonicInstant, lastActivity: MonotonicInstant, unfinishedLineSince: MonotonicInstant?,
        busy: Bool, waitingForOutput: Bool
    ) -> Deadline? {
        let idle = limits.idleTimeoutMilliseconds
        if idle > 0 && !busy && now.nanoseconds(since: lastActivity) >= idle * 1_000_000 { return .idle }
        let line = limits.lineTimeoutMilliseconds
        if line > 0, !waitingForOutput, let since = unfinishedLineSince,
            now.nanoseconds(since: since) >= line * 1_000_000
        {
            return .unfinishedLine(.invalidRequest("line not completed within \(line) ms"))
        }
        return nil
    }
}

/// Why a connection neither reads nor runs requests for now.
public enum AdmissionWait: Sendable, Equatable {
    /// Its share of this loop turn's work (or its account's) is spent: the rest runs next turn.
    case nextTurn
    /// Too many of its answers (or its account's) wait for the client to read them.
    case unsentOutput
    /// Its account holds its share of the daemon's memory.
    case memory
}

/// What one account holds across its connections, for the per-user caps: the uid of an account,
/// whose subordinate uids' connections count as its own.
public final class UserLoad {
    public let uid: UInt32
    public internal(set) var connections = 0
    public internal(set) var inFlight = 0
    /// Answer bytes waiting for its clients to read them.
    public internal(set) var unsentOutput = 0
    /// Memory its connections hold, by capacity (`ServerLimits.memoryBoundPerUser`).
    public internal(set) var memory = 0
    @usableFromInline var shareOfTurn = WorkCredit()
    /// The one connection (by id) that may go on reading and running past the memory bound to
    /// finish the line it holds (`Admission.mayFinishItsLine`).
    public internal(set) var finishingLine: UInt64?

    init(uid: UInt32) { self.uid = uid }

    /// Its share of the current turn's work.
    public var credit: WorkCredit { shareOfTurn }

    var isUnused: Bool { connections == 0 && inFlight == 0 }
}

@available(*, unavailable)
extension UserLoad: Sendable {}

/// What one connection holds and may still do, as `Admission` counts it; the connection keeps
/// it and passes it to each question.
public struct ConnectionBudget {
    public let id: UInt64
    /// Its account.
    public let user: UserLoad
    @usableFromInline var credit = WorkCredit()
    /// Requests and notifications of this connection in flight.
    public internal(set) var inFlight = 0
    /// What it added to its account's and the daemon's figures.
    public internal(set) var chargedMemory = 0
    public internal(set) var chargedUnsentOutput = 0
    var waitsForMemory = false

    init(id: UInt64, user: UserLoad) {
        self.id = id
        self.user = user
    }
}
