import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSSystem

/// RPCServer and Connection in-process: dispatch, per-turn batching and work budgets, output
/// caps, memory by capacity, streamed answers, in-flight caps (notifications and per-user),
/// deadlines, hang-ups and the EMFILE pause.
@Suite(.serialized)
struct InProcessServerTests {
    static func limits(_ change: (inout ServerLimits) -> Void = { _ in }) -> ServerLimits {
        var limits = ServerLimits()
        change(&limits)
        return limits
    }

    @Test func answersWithTheIDAsWritten() throws {
        let harness = try InProcessServer()
        let peer = try harness.connect()
        try peer.send(#"{"jsonrpc":"2.0","id":1.50,"method":"status"}"# + "\n")
        try peer.send(#"{"jsonrpc":"2.0","id":"\u0041","method":"status"}"# + "\n")
        #expect(peer.awaitLines(2))
        #expect(peer.lines[0].hasPrefix(#"{"jsonrpc":"2.0","id":1.50,"result":{"version":"test""#))
        #expect(peer.lines[1].hasPrefix(#"{"jsonrpc":"2.0","id":"A","result":"#))
    }

    /// Work that must not compete with the first answer (the saved DNS cache's read) runs once,
    /// at the end of the first turn that sent output, when that answer is already on its way.
    @Test func whatWaitsForTheFirstAnswerRunsOnceAfterItIsSent() throws {
        let harness = try InProcessServer()
        var runs = 0
        var answerWasSent = false
        let peer = try harness.connect()
        harness.server.afterFirstAnswer = {
            runs += 1
            var byte: UInt8 = 0
            answerWasSent = recv(peer.fd.rawValue, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 1
        }
        harness.loop.runTurn(maxWaitMilliseconds: 0)
        #expect(runs == 0, "no output yet")
        try peer.send(#"{"jsonrpc":"2.0","id":1,"method":"status"}"# + "\n")
        #expect(peer.awaitLines(1))
        #expect(runs == 1 && answerWasSent)
        try peer.send(#"{"jsonrpc":"2.0","id":2,"method":"status"}"# + "\n")
        #expect(peer.awaitLines(2))
        #expect(runs == 1)
    }

    /// The server dispatches exactly the document's methods: each reaches its typed function,
    /// any other name is -32601.
    @Test func everyMethodOfTheContractIsDispatched() throws {
        let harness = try InProcessServer()
        let peer = try harness.connect()
        let params: [Method: JSON] = [
            .resolve: ["host": "a.example"], .reverse: ["address": "192.0.2.1"],
            .getCookieHeader: ["url": "https://a.example/"],
            .handleSetCookie: ["url": "https://a.example/", "setCookie": ["a=1"]],
            .deleteCookies: ["all": true], .importCookies: ["data": ""], .forget: ["all": true],
        ]
        for (i, method) in Method.allCases.enumerated() {
            try peer.send(peer.request(method.rawValue, id: .int(i), params[method]))
        }
        try peer.send(peer.request("resolv", id: "x"))
        #expect(peer.awaitLines(Method.allCases.count + 1))
        for (i, method) in Method.allCases.enumerated() {
            let response = try #require(peer.response(id: .int(i)))
            #expect(response["result"] != nil, "\(method.rawValue): \(response.encodedString)")
        }
        #expect(harness.methods.calls == Method.allCases)
        #expect(peer.response(id: "x")?["error"]?["code"] == .int(-32601))
    }

    /// Malformed lines get the decoder's errors, whichever lane they took.
    @Test func malformedInputKeepsItsErrors() throws {
        let harness = try InProcessServer()
        let peer = try harness.connect()
        try peer.send("garbage\n")
        try peer.send(#"{"jsonrpc":"2.0","id":2,"method":"resolve","params":{"host":5}}"# + "\n")
        try peer.send(#"{"jsonrpc":"2.0","id":3,"method":"resolve","params":[1]}"# + "\n")
        try peer.send(
            #"{"jsonrpc":"2.0","id":4,"method":"handleSetCookie","params":{"url":"u","setCookie":["a",1]}}"# + "\n")
        #expect(peer.awaitLines(4))
        #expect(peer.response(id: .null)?["error"]?["code"] == .int(-32700))
        #expect(peer.response(id: 2)?["error"]?["data"]?["field"] == "host")
        #expect(peer.response(id: 3)?["error"]?["data"]?["field"] == "params")
        #expect(peer.response(id: 4)?["error"]?["data"]?["field"] == "setCookie[1]")
    }

    /// One turn runs at most `workPerTurn` units of a connection (its read is one, a small
    /// request one); the rest run in the next turns without any new byte arriving (they are
    /// already read: no readable event would come).
    @Test func aTurnRunsABudgetOfRequestsAndTheRestFollowsWithoutNewInput() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.workPerTurn = 11 })
        let peer = try harness.connect()
        try peer.send(String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"status"}"# + "\n", count: 35))
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(harness.methods.calls.count == 10)
        peer.receive()
        #expect(peer.lines.count == 10, "the turn's answers were sent at its end")
        #expect(peer.awaitLines(35))
        #expect(harness.methods.calls.count == 35)
    }

    /// A client that pipelines large (streamed) answers and never reads gets one piece buffered
    /// and the snapshots of a few queued answers; its remaining requests wait, unread, and all
    /// are answered once it reads.
    @Test func outputOverTheCapStopsRequestsUntilTheClientReads() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxPendingOutput = 256 << 10 })
        harness.methods.listed = (0..<64).map { FakeMethods.cookie(bytes: 1000, index: $0) }  // ~70 KB an answer
        let peer = try harness.connect()
        let requests = 400
        let line = #"{"jsonrpc":"2.0","id":7,"method":"listCookies"}"# + "\n"
        let text = String(repeating: line, count: requests)
        // Write what the socket takes; the rest goes as the server reads.
        var sent = text.utf8.startIndex
        func pump() {
            while sent < text.utf8.endIndex {
                let chunk = Array(text.utf8[sent...].prefix(64 * 1024))
                let n = chunk.withUnsafeBytes { send(peer.fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { return }
                sent = text.utf8.index(sent, offsetBy: n)
            }
        }
        pump()
        for _ in 0..<50 {
            harness.loop.runTurn(maxWaitMilliseconds: 20)
            pump()
        }
        let answered = harness.methods.calls.count
        #expect(answered < requests, "the server stopped running requests")
        // What the daemon holds: a piece of the answer being written, and the snapshots of the
        // answers queued behind it up to the cap (the kernel's buffers aside).
        let user = try #require(harness.server.load(of: getuid()))
        #expect(user.unsentOutput <= 2 * Connection.pieceSize, "unsent \(user.unsentOutput)")
        #expect(user.memory <= 256 * 1024 + 3 * 80 * 1024, "held \(user.memory)")
        // Now the client reads: every request is answered, without it sending anything more.
        #expect(
            harness.run(turns: 2_000) {
                pump()
                peer.receive()
                return peer.lines.count == requests
            }, "answered \(peer.lines.count) of \(requests)")
    }

    /// Across the connections of one user: a connection with unsent output waits while the user
    /// is over its cap; past twice the cap the connections holding the most are dropped. A
    /// sibling that reads its answers, and other users, are served throughout.
    @Test func outputOfOneUserIsCappedAcrossItsConnections() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.maxPendingOutput = 1 << 20
                $0.maxPendingOutputPerUser = 200 << 10
            })
        harness.methods.listed = (0..<64).map { FakeMethods.cookie(bytes: 1000, index: $0) }  // ~70 KB an answer
        // Small kernel buffers, so that answers pile up in the daemon rather than in the kernel.
        let hostile = try (0..<20).map { _ in try harness.connect(uid: 1000, sendBuffer: 4096) }
        let sibling = try harness.connect(uid: 1000)
        let other = try harness.connect(uid: 1001)
        for peer in hostile {
            try peer.send(String(repeating: #"{"jsonrpc":"2.0","id":7,"method":"listCookies"}"# + "\n", count: 20))
        }
        for _ in 0..<30 { harness.loop.runTurn(maxWaitMilliseconds: 10) }
        let user = try #require(harness.server.load(of: 1000))
        #expect(user.unsentOutput <= 400 * 1024 + 80 * 1024, "held \(user.unsentOutput)")
        #expect(hostile.contains { $0.awaitEOF(turns: 1) }, "the largest holders were dropped")
        #expect(harness.log.lines.withLock { $0.contains { $0.contains("holding the most answers unread") } })
        for peer in [sibling, other] {
            try peer.send(peer.request("status", id: 1))
            #expect(peer.awaitLines(1))
        }
    }

    /// The answers a batch collects count as output: elements past the cap are refused.
    @Test func aBatchOfLargeAnswersIsCapped() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxPendingOutput = 200 << 10 })
        harness.methods.exported = String(repeating: "x", count: 70_000)
        let peer = try harness.connect()
        let element = #"{"jsonrpc":"2.0","id":1,"method":"exportCookies"}"#
        try peer.send("[" + Array(repeating: element, count: 10).joined(separator: ",") + "]\n")
        #expect(peer.awaitLines(1))
        let batch = try #require(peer.responses.first?.arrayValue)
        #expect(batch.count == 10)
        let refused = batch.filter { $0["error"]?["code"] == .int(-32003) }.count
        #expect(refused >= 6 && refused < 10, "\(refused) refused")
    }

    @Test func requestsInFlightOnOneConnectionAreCapped() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxRequestsInFlight = 2 })
        let peer = try harness.connect()
        for id in 1...3 { try peer.send(peer.request("resolve", id: .int(id), ["host": "slow.example"])) }
        #expect(peer.awaitLines(1))
        #expect(peer.response(id: 3)?["error"]?["code"] == .int(-32003))
        #expect(peer.response(id: 3)?["error"]?["data"]?["name"] == "LimitExceeded")
        harness.methods.releaseHeld()
        #expect(peer.awaitLines(3))
        #expect(peer.response(id: 1)?["result"] != nil && peer.response(id: 2)?["result"] != nil)
    }

    /// A notification is in flight until its method replies, like any request; beyond the cap
    /// notifications are dropped (they cannot be answered) and requests are refused.
    @Test func notificationsCountAgainstTheInFlightCap() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxRequestsInFlight = 2 })
        let peer = try harness.connect()
        for _ in 0..<3 { try peer.send(peer.request("resolve", id: nil, ["host": "slow.example"])) }
        try peer.send(peer.request("status", id: 9))
        #expect(peer.awaitLines(1))
        #expect(harness.methods.heldCount == 2, "the third notification was dropped")
        #expect(peer.response(id: 9)?["error"]?["code"] == .int(-32003))
        harness.methods.releaseHeld()
        try peer.send(peer.request("status", id: 10))
        #expect(peer.awaitLines(2))
        #expect(peer.response(id: 10)?["result"] != nil)
        #expect(peer.lines.count == 2, "notifications are never answered")
    }

    @Test func requestsInFlightOfOneUserAreCappedAcrossConnections() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxRequestsInFlightPerUser = 3 })
        let first = try harness.connect(uid: 1000)
        let second = try harness.connect(uid: 1000)
        let stranger = try harness.connect(uid: 1001)
        for id in 1...2 { try first.send(first.request("resolve", id: .int(id), ["host": "slow.example"])) }
        for id in 3...4 { try second.send(second.request("resolve", id: .int(id), ["host": "slow.example"])) }
        #expect(second.awaitLines(1))
        #expect(second.response(id: 4)?["error"]?["code"] == .int(-32003))
        #expect(second.response(id: 4)?["error"]?["data"]?["what"] == "requests in flight of one user")
        try stranger.send(stranger.request("resolve", id: 5, ["host": "slow.example"]))
        #expect(harness.run { harness.methods.heldCount == 4 }, "another user is not limited by it")
        harness.methods.releaseHeld()
        #expect(first.awaitLines(2) && stranger.awaitLines(1))
        #expect(harness.server.load(of: 1000)?.inFlight ?? 0 == 0)
    }

    /// A peer that closed entirely while a request is in flight is dropped from epoll at once
    /// (EPOLLHUP cannot be masked: a watched descriptor would wake every turn); the request still
    /// completes and is counted out of flight.
    @Test func aPeerThatHungUpIsDroppedWhileItsRequestRuns() throws {
        let harness = try InProcessServer()
        var peer: Peer? = try harness.connect(uid: 1000)
        try peer?.send(peer!.request("resolve", id: 1, ["host": "slow.example"]))
        #expect(harness.run { harness.methods.heldCount == 1 })
        peer = nil  // closes the client's end
        #expect(harness.run { harness.server.connectionCount == 0 })
        #expect(harness.server.load(of: 1000)?.inFlight == 1, "still counted until it completes")
        harness.methods.releaseHeld()
        #expect(harness.server.load(of: 1000) == nil)
    }

    /// A half-close (socat after its stdin's end) still gets every answer, then the close.
    @Test func aHalfClosedPeerGetsEveryAnswer() throws {
        let harness = try InProcessServer()
        let peer = try harness.connect()
        try peer.send(peer.request("resolve", id: 1, ["host": "slow.example"]))
        try peer.send(peer.request("status", id: 2))
        peer.closeWrite()
        #expect(peer.awaitLines(1))
        harness.methods.releaseHeld()
        #expect(peer.awaitLines(2))
        #expect(peer.awaitEOF())
        #expect(peer.response(id: 1)?["result"] != nil)
    }

    /// Requests a client sent just before closing still run (notifications must not be lost).
    @Test func notificationsSentBeforeAHangUpStillRun() throws {
        let harness = try InProcessServer()
        var peer: Peer? = try harness.connect()
        for _ in 0..<3 { try peer?.send(peer!.request("flushCache", id: nil)) }
        peer = nil
        #expect(harness.run { harness.server.connectionCount == 0 })
        #expect(harness.methods.calls == [.flushCache, .flushCache, .flushCache])
    }

    @Test func anIdleConnectionIsClosedAfterIdleTimeout() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.idleTimeoutMilliseconds = 1_000 })
        let idle = try harness.connect()
        let busy = try harness.connect()
        try busy.send(busy.request("resolve", id: 1, ["host": "slow.example"]))
        #expect(harness.run { harness.methods.heldCount == 1 })
        harness.advance(milliseconds: 600)
        idle.receive()
        #expect(!idle.reachedEOF)
        harness.advance(milliseconds: 600)
        #expect(idle.awaitEOF())
        busy.receive()
        #expect(!busy.reachedEOF, "a connection with a request in flight is not idle")
        #expect(harness.server.connectionCount == 1)
    }

    @Test func anUnfinishedLineIsClosedAfterLineTimeout() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.lineTimeoutMilliseconds = 2_000 })
        let peer = try harness.connect()
        let idle = harness.server.memory
        try peer.send(#"{"jsonrpc":"2.0","id":1,"met"#)
        #expect(harness.run { harness.server.memory > idle })
        harness.advance(milliseconds: 1_500)
        peer.receive()
        #expect(!peer.reachedEOF)
        harness.advance(milliseconds: 1_000)
        #expect(peer.awaitEOF())
        #expect(peer.responses.first?["error"]?["code"] == .int(-32600))
        #expect(harness.server.memory == 0, "a closed connection holds nothing")
    }

    /// Memory is bounded per user, by capacity: past the bound a user's connections read no
    /// more (their bytes wait in the kernel), other users are served, and once LineTimeout=
    /// closes the holders, the waiting connection reads and is answered.
    @Test func readingStopsAtTheUsersMemoryBoundAndResumesWhenItIsReleased() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.maxLineLength = 64 << 10
                $0.memoryPerUser = 256 << 10
                $0.lineTimeoutMilliseconds = 2_000
            })
        let half =
            #"{"jsonrpc":"2.0","id":1,"method":"status","params":{"pad":""# + String(repeating: "x", count: 60_000)
        var holders: [Peer] = []
        while holders.count < 10, !(harness.server.load(of: 1000).map(harness.server.isOverMemory) ?? false) {
            let before = harness.server.memory
            let peer = try harness.connect(uid: 1000)
            try peer.send(half)
            holders.append(peer)
            #expect(harness.run(turns: 20) { harness.server.memory > before + 30_000 }, "its line was read")
        }
        let user = try #require(harness.server.load(of: 1000))
        #expect(harness.server.isOverMemory(user))
        #expect((4...6).contains(holders.count), "\(holders.count) half lines of 60 KB reached 256 KiB")
        // One read past the bound at most: 64 KiB and the buffer it grew.
        #expect(user.memory <= (256 << 10) + (160 << 10), "held \(user.memory)")
        let other = try harness.connect(uid: 1001)
        try other.send(half + #""}}"# + "\n")
        #expect(other.awaitLines(1), "another user is served")
        // A connection of the same user waits for memory with its request unread.
        let waiting = try harness.connect(uid: 1000)
        try waiting.send(waiting.request("status", id: 7))
        harness.run(turns: 5) { false }
        waiting.receive()
        #expect(waiting.lines.isEmpty)
        // LineTimeout= closes the holders: their memory goes, and the waiting request runs.
        harness.advance(milliseconds: 2_100)
        harness.advance(milliseconds: 1_000)
        #expect(waiting.awaitLines(1), "answered once memory was released")
        #expect(waiting.response(id: 7)?["result"] != nil)
        #expect(holders.allSatisfy { $0.awaitEOF(turns: 5) })
    }

    /// A peer that refills the backlog as fast as it is drained (connect and close in a loop)
    /// gets `acceptsPerTurn` accepts a turn, each charged to its uid; in between, the other
    /// users' requests and the loop's timers run (the loop stayed in accept for 8 s before).
    @Test func aConnectAndCloseStormGetsABoundedNumberOfAcceptsPerTurn() throws {
        let limits = Self.limits()
        let harness = try InProcessServer(limits: limits)
        let victim = try harness.connect(uid: 2000)
        var timerFired = false
        harness.loop.schedule(afterMilliseconds: 0) { timerFired = true }
        harness.seams.stormUID = 3000
        // One real connection makes the listener readable; the seam never runs dry after it.
        let trigger = try UnixSocket.connect(path: harness.directory.file("s.sock"))
        defer { trigger.close() }
        try victim.send(victim.request("status", id: 1))
        var acceptsPerTurn: [Int] = []
        for _ in 0..<20 {
            let before = harness.seams.accepted
            harness.loop.runTurn(maxWaitMilliseconds: 100)
            acceptsPerTurn.append(harness.seams.accepted - before)
            victim.receive()
            if victim.response(id: 1) != nil && timerFired && acceptsPerTurn.count >= 3 { break }
        }
        #expect(victim.response(id: 1)?["result"] != nil, "the victim was answered during the storm")
        #expect(timerFired, "timers fired during the storm")
        #expect(acceptsPerTurn.max() ?? 0 <= limits.acceptsPerTurn, "\(acceptsPerTurn)")
        #expect(acceptsPerTurn.contains(limits.acceptsPerTurn), "the storm was served: \(acceptsPerTurn)")
        harness.seams.stormUID = nil
    }

    /// Each admission spends its uid's share of the turn, so a storming uid's own connections
    /// run less in the turns it storms, and another uid's do not.
    @Test func admissionsAreChargedToTheUidThatConnects() throws {
        let limits = Self.limits {
            $0.acceptsPerTurn = 512; $0.workPerTurnPerUser = 64
        }
        let harness = try InProcessServer(limits: limits)
        harness.seams.stormUID = 3000
        let trigger = try UnixSocket.connect(path: harness.directory.file("s.sock"))
        defer { trigger.close() }
        harness.loop.runTurn(maxWaitMilliseconds: 100)
        harness.seams.stormUID = nil
        var credit = try #require(harness.server.load(of: 3000)).credit
        let hasCredit = credit.isAvailable(turn: harness.server.turn, perTurn: limits.workPerTurnPerUser)
        #expect(!hasCredit, "512 admissions overdrew the storming uid's share of the next turn")
        #expect(harness.server.load(of: 2000) == nil)
    }

    /// Two users holding every connection of the total leave a third its reserve: it connects
    /// (and is served) up to `reservedConnectionsPerUser`, then is refused like the others.
    @Test func aFullTotalLeavesEachOtherUserItsReserve() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.maxConnections = 8
                $0.maxConnectionsPerUser = 4
                $0.reservedConnectionsPerUser = 2
            })
        let held = try (0..<8).map { try harness.connect(uid: 3000 + UInt32($0 / 4)) }
        #expect(harness.server.connectionCount == 8)
        let refused = try harness.connect(uid: 3000)
        #expect(refused.awaitEOF() && refused.lines.first?.contains("Limit exceeded: connections") == true)
        let reserve = try (0..<2).map { _ in try harness.connect(uid: 2000) }
        for (index, peer) in reserve.enumerated() {
            try peer.send(peer.request("status", id: .int(index)))
            #expect(peer.awaitLines(1) && peer.response(id: .int(index))?["result"] != nil)
        }
        let third = try harness.connect(uid: 2000)
        #expect(third.awaitEOF())
        #expect(third.lines.first?.contains("Limit exceeded: connections") == true, "\(third.lines)")
        _ = held
    }

    /// Connections of subordinate uids count against their owner's per-user cap (and its work
    /// and memory: one account): a fifth uid of the same person is refused like a fifth
    /// connection of one uid, another person is not.
    @Test func subordinateUidsAreChargedToTheirOwner() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.maxConnectionsPerUser = 4 })
        harness.server.accountOf = { $0 >= 100_000 && $0 < 165_536 ? 1000 : $0 }
        let admitted = try (0..<4).map { try harness.connect(uid: 100_000 + UInt32($0)) }
        #expect(harness.server.load(of: 1000)?.connections == 4)
        let fifth = try harness.connect(uid: 100_004)
        #expect(fifth.awaitEOF())
        #expect(fifth.lines.first?.contains("connections of one user") == true, "\(fifth.lines)")
        let other = try harness.connect(uid: 2000)
        try other.send(other.request("status", id: 1))
        #expect(other.awaitLines(1) && other.response(id: 1)?["result"] != nil)
        try admitted[0].send(admitted[0].request("getCookieHeader", id: 2, ["url": "https://a.example/"]))
        #expect(admitted[0].awaitLines(1))
        #expect(admitted[0].response(id: 2)?["result"]?["header"] == "uid=100000", "the jar is the uid's own")
    }

    /// EMFILE on accept pauses accepting instead of spinning on a ready listener; accepting
    /// resumes after the pause, on the loop's clock.
    @Test func acceptPausesOnEMFILE() throws {
        let harness = try InProcessServer()
        harness.seams.acceptFailures = [.tooManyOpenFiles]
        let client = try UnixSocket.connect(path: harness.directory.file("s.sock"))
        defer { client.close() }
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(!harness.server.isListening)
        #expect(harness.server.connectionCount == 0)
        #expect(harness.log.lines.withLock { $0.contains { $0.contains("pausing") } })
        harness.advance(milliseconds: 50)
        #expect(!harness.server.isListening)
        harness.advance(milliseconds: 60)
        #expect(harness.server.isListening)
        #expect(harness.run { harness.server.connectionCount == 1 })
    }
}
