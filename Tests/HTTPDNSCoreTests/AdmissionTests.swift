import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The admission machine alone: who connects, reads, runs, waits or is refused, turn by turn and
/// on the manual clock, with the daemon's default limits and the figures the attack tests use
/// (`AttackBoundsTests`, `InProcessServerTests`): 1024 connections of one uid, 4096 in all with a
/// reserve of 16, 32 accepts a turn, 64 units of work a connection and 512 a uid per turn,
/// 512 KiB and 4 MiB of unread answers, 64 MiB of memory a uid and 256 MiB in all.
struct AdmissionTests {
    /// A machine and the connections it admitted, by account.
    struct Daemon {
        var admission: Admission
        var nextID: UInt64 = 1

        init(_ change: (inout ServerLimits) -> Void = { _ in }) {
            var limits = ServerLimits()
            change(&limits)
            admission = Admission(limits: limits)
        }

        /// A peer of `account` connects: its budget once open, or the refusal it is told.
        mutating func connect(_ account: UInt32) -> Result<ConnectionBudget, RPCError> {
            switch admission.arrives(account: account) {
            case .refuse(let error):
                return .failure(error)
            case .admit(let user):
                defer { nextID += 1 }
                return .success(admission.opened(id: nextID, user: user))
            }
        }

        mutating func open(_ account: UInt32) throws -> ConnectionBudget {
            try connect(account).get()
        }

        /// Why `connection` may not run its next request (with nothing of its own unsent).
        mutating func waitToRun(_ connection: inout ConnectionBudget, unsent: Int = 0, holdsInput: Bool = false)
            -> AdmissionWait?
        {
            admission.reasonToWait(
                &connection, output: Admission.HeldOutput(unsent: unsent, answersQueued: false, heldBehind: 0),
                serving: true, holdsInput: holdsInput)
        }
    }

    /// The -32003 refusal's `data.what` and `data.limit`.
    static func limit(_ error: RPCError?) -> (what: String, limit: Int)? {
        guard let error, error.code == .limitExceeded, let what = error.data["what"]?.stringValue,
            let limit = error.data["limit"]?.numberValue?.int64Value
        else { return nil }
        return (what, Int(limit))
    }

    static func limit(_ result: Result<ConnectionBudget, RPCError>) -> (what: String, limit: Int)? {
        guard case .failure(let error) = result else { return nil }
        return limit(error)
    }

    // MARK: connections

    /// A uid at its 1024 connections is refused ("connections of one user") while another is
    /// admitted; a closed connection makes room again.
    @Test func aUidAtItsConnectionCapIsRefusedWhileAnotherIsAdmitted() throws {
        var daemon = Daemon()
        var held = try (0..<1024).map { _ in try daemon.open(3000) }
        let refused = Self.limit(daemon.connect(3000))
        #expect(refused?.what == "connections of one user" && refused?.limit == 1024, "\(String(describing: refused))")
        #expect(throws: Never.self) { try daemon.open(2000) }
        #expect(daemon.admission.load(of: 3000)?.connections == 1024)
        daemon.admission.closed(&held[0])
        #expect(throws: Never.self) { try daemon.open(3000) }
        #expect(daemon.admission.connectionCount == 1025)
    }

    /// Four uids holding all 4096 connections leave a fifth uid (and one that already has a
    /// few) its reserve of 16, then refuse it like the others ("connections", at most 4096):
    /// issue 42's "4 uids x 1024 refuse a fifth".
    @Test func theDaemonWideCapLeavesEachOtherUidItsReserve() throws {
        var daemon = Daemon()
        var victims = [try daemon.open(2000)]
        for uid in UInt32(3000)..<3004 {
            for _ in 0..<(uid == 3000 ? 1023 : 1024) { _ = try daemon.open(uid) }
        }
        #expect(daemon.admission.connectionCount == 4096)
        let storm = Self.limit(daemon.connect(3001))
        #expect(storm?.what == "connections" && storm?.limit == 4096, "\(String(describing: storm))")
        for _ in 1..<16 { victims.append(try daemon.open(2000)) }
        #expect(Self.limit(daemon.connect(2000))?.what == "connections", "the reserve is 16")
        for _ in 0..<16 { _ = try daemon.open(2001) }
        #expect(Self.limit(daemon.connect(2001))?.what == "connections")
        // A victim that closes one gets it back, whatever the others hold.
        daemon.admission.closed(&victims[0])
        #expect(throws: Never.self) { try daemon.open(2000) }
    }

    /// An account with no connection and nothing in flight is forgotten; one with a request in
    /// flight on a closed connection stays until the request is answered.
    @Test func anAccountIsForgottenOnceItHoldsNothing() throws {
        var daemon = Daemon()
        var connection = try daemon.open(1000)
        #expect(daemon.admission.requestArrives(&connection) == nil)
        daemon.admission.closed(&connection)
        #expect(daemon.admission.load(of: 1000)?.inFlight == 1, "still counted until it completes")
        daemon.admission.answered(&connection, connectionClosed: true)
        #expect(daemon.admission.load(of: 1000) == nil)
        #expect(daemon.admission.accountCount == 0)
    }

    // MARK: accepts and work per turn

    /// A connect-and-close storm gets 32 accepts a turn, each charged 2 units to the storming
    /// uid: 16 turns of storm at 32 accepts overdraw nothing, but at 512 accepts a turn (the
    /// in-process test's figure) the storming uid's own connection waits for the next turn while
    /// another uid's runs in this one.
    @Test func anAcceptStormIsBoundedPerTurnAndChargedToItsUid() throws {
        var daemon = Daemon()
        var victim = try daemon.open(2000)
        var stormer = try daemon.open(3000)
        for _ in 0..<16 {
            var accepted = 0
            while daemon.admission.mayAccept() {
                accepted += 1
                if case .admit(let user) = daemon.admission.arrives(account: 3000) {
                    var connection = daemon.admission.opened(id: 99, user: user)
                    daemon.admission.closed(&connection)
                }
            }
            #expect(accepted == 32)
            #expect(daemon.waitToRun(&victim) == nil)
            #expect(daemon.waitToRun(&stormer) == nil, "64 of 512 units")
            daemon.admission.turnEnded()
        }

        var storm = Daemon { $0.acceptsPerTurn = 512 }
        var own = try storm.open(3000)
        var other = try storm.open(2000)
        storm.admission.turnEnded()
        var accepted = 0
        while storm.admission.mayAccept() {
            accepted += 1
            _ = storm.admission.arrives(account: 3000)
        }
        #expect(accepted == 512)
        #expect(storm.waitToRun(&own) == .nextTurn, "1024 units of admissions spent its 512")
        #expect(storm.waitToRun(&other) == nil, "another uid runs in the same turn")
        // The debt is paid off a share per turn: two turns later it runs again.
        storm.admission.turnEnded()
        #expect(storm.waitToRun(&own) == .nextTurn)
        storm.admission.turnEnded()
        #expect(storm.waitToRun(&own) == nil)
    }

    /// A connection runs 64 units a turn and its uid 512 across all its connections: ten
    /// connections of one uid each doing small requests run 512 in all, and another uid's
    /// connection is served in that same turn.
    @Test func aUidsConnectionsShareOneBudgetPerTurn() throws {
        var daemon = Daemon()
        var many = try (0..<10).map { _ in try daemon.open(1000) }
        var other = try daemon.open(1001)
        daemon.admission.turnEnded()
        daemon.admission.turnEnded()
        var ran = 0
        for index in many.indices {
            while daemon.waitToRun(&many[index]) == nil {
                daemon.admission.charge(&many[index], 1)
                ran += 1
            }
        }
        #expect(ran == 512, "ran \(ran)")
        #expect(daemon.waitToRun(&other) == nil)
        daemon.admission.charge(&other, 64)
        #expect(daemon.waitToRun(&other) == .nextTurn, "its own 64 spent")
        daemon.admission.turnEnded()
        #expect(daemon.waitToRun(&many[0]) == nil && daemon.waitToRun(&other) == nil)
    }

    /// Long work in slices (`importCookies`) is charged to its account's share: spent, the
    /// account's slices wait for the next turn; an account with nothing open has its share.
    @Test func slicesSpendTheirAccountsShare() throws {
        var daemon = Daemon()
        _ = try daemon.open(1000)
        daemon.admission.turnEnded()
        #expect(daemon.admission.sliceMayRun(account: 1000))
        daemon.admission.chargeSlice(account: 1000, units: 512)
        #expect(!daemon.admission.sliceMayRun(account: 1000))
        #expect(daemon.admission.sliceMayRun(account: 1001))
        daemon.admission.turnEnded()
        #expect(daemon.admission.sliceMayRun(account: 1000))
    }

    // MARK: requests in flight

    /// 1024 requests in flight on one connection, 4096 across one uid's: past them the refusal
    /// names the bound; a refused request is in flight until its refusal is answered.
    @Test func requestsInFlightAreCappedPerConnectionAndPerUid() throws {
        var daemon = Daemon()
        var connections = try (0..<4).map { _ in try daemon.open(1000) }
        for _ in 0..<1024 { #expect(daemon.admission.requestArrives(&connections[0]) == nil) }
        let onOne = Self.limit(daemon.admission.requestArrives(&connections[0]))
        #expect(onOne?.what == "requests in flight on one connection" && onOne?.limit == 1024)
        daemon.admission.answered(&connections[0], connectionClosed: false)
        for index in 1..<4 {
            for _ in 0..<1024 { #expect(daemon.admission.requestArrives(&connections[index]) == nil) }
        }
        #expect(daemon.admission.load(of: 1000)?.inFlight == 4096)
        var fifth = try daemon.open(1000)
        let ofUser = Self.limit(daemon.admission.requestArrives(&fifth))
        #expect(ofUser?.what == "requests in flight of one user" && ofUser?.limit == 4096)
        var stranger = try daemon.open(1001)
        #expect(daemon.admission.requestArrives(&stranger) == nil, "another uid is not limited by it")
    }

    // MARK: unsent output

    /// A connection with 512 KiB of its answers unread waits; one of the same uid with nothing
    /// unsent runs even while the uid is over its 4 MiB; past 8 MiB the uid is shed, largest
    /// holders first, until it is back under 4 MiB.
    @Test func unreadAnswersStopTheirConnectionAndPastTwiceTheCapAreShed() throws {
        var daemon = Daemon()
        var holders = try (0..<9).map { _ in try daemon.open(1000) }
        var reader = try daemon.open(1000)
        daemon.admission.holds(&holders[0], memory: 600 << 10, unsentOutput: 600 << 10)
        #expect(daemon.waitToRun(&holders[0], unsent: 600 << 10) == .unsentOutput)
        #expect(daemon.waitToRun(&holders[0], unsent: 100 << 10) == nil, "its own under 512 KiB, the uid's under 4 MiB")
        for index in 1..<8 { daemon.admission.holds(&holders[index], memory: 1 << 20, unsentOutput: 1 << 20) }
        #expect(daemon.admission.accountsToShed().isEmpty, "7.6 MiB is not past 8 MiB")
        #expect(daemon.waitToRun(&holders[1], unsent: 100 << 10) == .unsentOutput, "the uid is over its 4 MiB")
        #expect(daemon.waitToRun(&reader) == nil, "a connection whose client read everything runs")
        daemon.admission.holds(&holders[8], memory: 1 << 20, unsentOutput: 1 << 20)
        let shed = daemon.admission.accountsToShed()
        #expect(shed.map(\.uid) == [1000])
        var closed = 0
        for index in holders.indices.reversed() where daemon.admission.mustShed(shed[0]) {
            daemon.admission.holds(&holders[index], memory: 0, unsentOutput: 0)
            closed += 1
        }
        #expect(closed == 5, "8.6 MiB less five of 1 MiB")
        #expect(daemon.admission.load(of: 1000)?.unsentOutput == (3 << 20) + (600 << 10))
        #expect(daemon.admission.accountsToShed().isEmpty, "shed once")
    }

    /// A batch's elements past its first that would wait for output are refused (their answers
    /// leave with the batch: the wait would never end), as are those that would wait for memory
    /// while the batch holds answers; the next turn's work is waited for.
    @Test func batchElementsThatCannotWaitAreRefused() throws {
        let admission = Daemon().admission
        let output = admission.batchElement(waitingFor: .unsentOutput, batchHoldsAnswers: false)
        guard case .refuse(let refusal) = output else { throw RefusalExpected() }
        #expect(Self.limit(refusal)?.what == "output waiting for the client")
        #expect(Self.limit(refusal)?.limit == 512 << 10)
        guard case .refuse(let memory) = admission.batchElement(waitingFor: .memory, batchHoldsAnswers: true) else {
            throw RefusalExpected()
        }
        #expect(Self.limit(memory)?.what == "memory of one user" && Self.limit(memory)?.limit == 64 << 20)
        #expect(admission.batchElement(waitingFor: .memory, batchHoldsAnswers: false) == .wait(.memory))
        #expect(admission.batchElement(waitingFor: .nextTurn, batchHoldsAnswers: true) == .wait(.nextTurn))
        #expect(admission.batchRequestRefusal(collected: 400 << 10, unsent: 100 << 10) == nil)
        #expect(Self.limit(admission.batchRequestRefusal(collected: 400 << 10, unsent: 200 << 10))?.limit == 512 << 10)
    }

    struct RefusalExpected: Error {}

    // MARK: memory

    /// A uid holding its 64 MiB neither reads nor runs (one of its connections may finish its
    /// line); another uid is served in the same turn. Once memory is released, the waiters are
    /// named at the turn's end and go on.
    @Test func aUidHoldingItsMemoryWaitsAndAnotherIsServed() throws {
        var daemon = Daemon()
        var holders = try (0..<4).map { _ in try daemon.open(1000) }
        var waiting = try daemon.open(1000)
        var other = try daemon.open(1001)
        for index in holders.indices { daemon.admission.holds(&holders[index], memory: 16 << 20, unsentOutput: 0) }
        let user = try #require(daemon.admission.load(of: 1000))
        #expect(daemon.admission.isOverMemory(user))
        #expect(daemon.admission.reasonNotToRead(&waiting, serving: true, holdsInput: false) == .memory)
        #expect(daemon.waitToRun(&waiting) == .memory)
        #expect(daemon.admission.reasonNotToRead(&waiting, serving: false, holdsInput: false) == nil, "abandoned")
        #expect(daemon.admission.reasonNotToRead(&other, serving: true, holdsInput: false) == nil)
        #expect(daemon.waitToRun(&other) == nil, "another uid is served in the same turn")
        daemon.admission.waitForMemory(&waiting)
        daemon.admission.waitForMemory(&waiting)
        #expect(daemon.admission.memoryWaitersToWake().isEmpty, "nothing was released")
        daemon.admission.holds(&holders[0], memory: 8 << 20, unsentOutput: 0)
        let woken = daemon.admission.memoryWaitersToWake()
        #expect(woken == [waiting.id], "named once")
        #expect(daemon.admission.memoryWaitEnds(&waiting, holdsInput: false))
        #expect(daemon.waitToRun(&waiting) == nil)
    }

    /// Past the bound, one connection of the uid at a time finishes the line it holds (memory
    /// held by unfinished lines is released only by finishing them); when it has, the next may.
    @Test func unfinishedLinesPastTheBoundAreFinishedOneAtATime() throws {
        var daemon = Daemon()
        var peers = try (0..<3).map { _ in try daemon.open(1000) }
        for index in peers.indices { daemon.admission.holds(&peers[index], memory: 22 << 20, unsentOutput: 0) }
        #expect(daemon.admission.reasonNotToRead(&peers[0], serving: true, holdsInput: true) == nil, "it finishes")
        #expect(daemon.admission.reasonNotToRead(&peers[1], serving: true, holdsInput: true) == .memory)
        #expect(daemon.admission.reasonNotToRead(&peers[2], serving: true, holdsInput: false) == .memory)
        daemon.admission.waitForMemory(&peers[1])
        daemon.admission.lineFinished(&peers[0])
        #expect(daemon.admission.memoryWaitersToWake() == [peers[1].id], "finishing a line may make room")
        #expect(daemon.admission.memoryWaitEnds(&peers[1], holdsInput: true), "now it finishes its own")
        #expect(daemon.admission.reasonNotToRead(&peers[0], serving: true, holdsInput: true) == .memory)
    }

    /// The daemon-wide bound (256 MiB) stops the uids holding an equal share or more, never one
    /// that holds nothing or little: eight uids of 32 MiB fill it (none at its own 64 MiB), and
    /// a ninth that connects reads and runs.
    @Test func theDaemonWideMemoryBoundLeavesRoomForAUidThatHasNothing() throws {
        var daemon = Daemon()
        var holders = try (UInt32(3000)..<3008).map { try daemon.open($0) }
        for index in holders.indices { daemon.admission.holds(&holders[index], memory: 32 << 20, unsentOutput: 0) }
        #expect(daemon.admission.memory == 256 << 20)
        var newcomer = try daemon.open(2000)
        #expect(daemon.waitToRun(&holders[0]) == .memory, "an equal share of a full total")
        #expect(daemon.waitToRun(&newcomer) == nil)
        daemon.admission.holds(&newcomer, memory: 16 << 20, unsentOutput: 0)
        #expect(daemon.waitToRun(&newcomer) == nil, "less than an equal share")
        daemon.admission.holds(&holders[0], memory: 0, unsentOutput: 0)
        #expect(daemon.waitToRun(&holders[1]) == nil, "under the total again")
    }

    // MARK: deadlines

    /// On the manual clock: an idle connection closes after IdleTimeout= (300 s) unless a
    /// request is in flight; one holding an unfinished line is told after LineTimeout= (10 s),
    /// unless it waits for its client to read.
    @Test func deadlinesOnTheManualClock() throws {
        let admission = Daemon().admission
        let clock = ManualClock()
        func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: clock.nowNanoseconds()) }
        let start = now()
        #expect(admission.sweepIntervalMilliseconds == 1_000)
        clock.advance(milliseconds: 9_999)
        #expect(
            admission.deadline(
                now: now(), lastActivity: start, unfinishedLineSince: start, busy: false, waitingForOutput: false)
                == nil)
        clock.advance(milliseconds: 1)
        let line = admission.deadline(
            now: now(), lastActivity: start, unfinishedLineSince: start, busy: false, waitingForOutput: false)
        guard case .unfinishedLine(let error)? = line else { throw RefusalExpected() }
        #expect(error.code == .invalidRequest && error.message.contains("line not completed within 10000 ms"))
        #expect(
            admission.deadline(
                now: now(), lastActivity: start, unfinishedLineSince: start, busy: false, waitingForOutput: true)
                == nil)
        clock.advance(milliseconds: 290_000)
        #expect(
            admission.deadline(
                now: now(), lastActivity: start, unfinishedLineSince: nil, busy: false, waitingForOutput: false)
                == .idle)
        #expect(
            admission.deadline(
                now: now(), lastActivity: start, unfinishedLineSince: nil, busy: true, waitingForOutput: false)
                == nil)
        var never = Daemon {
            $0.idleTimeoutMilliseconds = 0
            $0.lineTimeoutMilliseconds = 0
        }.admission
        #expect(never.sweepIntervalMilliseconds == 0)
        never.apply(ServerLimits())
        #expect(never.sweepIntervalMilliseconds == 1_000)
    }
}
