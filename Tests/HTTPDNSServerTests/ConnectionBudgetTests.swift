import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// Work per turn by cost, whatever the framing; answers streamed as the client reads; memory
/// charged by capacity: in-process, turn by turn, on the manual clock.
@Suite(.serialized)
struct ConnectionBudgetTests {
    static func limits(_ change: (inout ServerLimits) -> Void = { _ in }) -> ServerLimits {
        InProcessServerTests.limits(change)
    }

    static func batch(_ element: String, count: Int) -> String {
        "[" + Array(repeating: element, count: count).joined(separator: ",") + "]\n"
    }

    /// A batch's elements and notifications draw from the connection's budget like lines do:
    /// a batch of 35 notifications runs a budget's worth per turn, and a request sent after it
    /// is answered once the batch has run.
    @Test func aBatchOfNotificationsRunsABudgetPerTurn() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.workPerTurn = 11 })
        let peer = try harness.connect()
        try peer.send(Self.batch(#"{"jsonrpc":"2.0","method":"status"}"#, count: 35))
        try peer.send(peer.request("status", id: 1))
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        let first = harness.methods.calls.count
        #expect(first >= 5 && first <= 10, "ran \(first) in the first turn")
        #expect(peer.awaitLines(1))
        #expect(harness.methods.calls.count == 36)
        #expect(peer.response(id: 1)?["result"] != nil)
    }

    /// A method that walks a jar costs with its size (`workUnits`), notification or not: three
    /// costly notifications spend a turn's budget, the rest run in later turns.
    @Test func costlyMethodsSpendTheBudgetAsTheyCost() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.workPerTurn = 64 })
        harness.methods.costs[.exportCookies] = 30
        let peer = try harness.connect()
        for _ in 0..<10 { try peer.send(peer.request("exportCookies", id: nil)) }
        try peer.send(peer.request("status", id: 1))
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(harness.methods.calls == [.exportCookies, .exportCookies, .exportCookies])
        #expect(peer.awaitLines(1))
        #expect(harness.methods.calls.filter { $0 == .exportCookies }.count == 10)
    }

    /// Ten requests of `method` on one connection, each costing about 30 units: a turn's budget
    /// of 64 runs two or three of them (with the read), the rest run in later turns.
    static func tenCostlyRequestsSpendTheirTurns(
        _ method: String, _ params: JSON? = nil, setUp: (FakeMethods) -> Void = { _ in }
    )
        throws
    {
        let harness = try InProcessServer(limits: Self.limits { $0.workPerTurn = 64 })
        setUp(harness.methods)
        let peer = try harness.connect()
        for id in 1...10 { try peer.send(peer.request(method, id: .int(id), params)) }
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect((2...3).contains(harness.methods.calls.count), "ran \(harness.methods.calls.count) in the first turn")
        #expect(peer.awaitLines(10))
        #expect(harness.methods.calls.count == 10)
    }

    /// An answer written whole costs with its size (a request per 2 KiB): 60 KiB, 30 units.
    @Test func largeAnswersSpendTheBudgetAsTheyCost() throws {
        try Self.tenCostlyRequestsSpendTheirTurns("metrics") {
            $0.metricsText = String(repeating: "x", count: 60 << 10)
        }
    }

    /// A handleSetCookie costs with its cookies (two requests each past the first): 16, 30 units.
    @Test func setsOfManyCookiesSpendTheBudgetAsTheyCost() throws {
        let cookies = JSON.array((0..<16).map { .string("c\($0)=v") })
        try Self.tenCostlyRequestsSpendTheirTurns(
            "handleSetCookie", ["url": "https://a.example/", "setCookie": cookies])
    }

    /// A client that queued requests and left entirely: once the server sees it gone, what it
    /// left runs only for its effects. Its costly reads stop (three exports spend the turn it is
    /// seen gone in; every method without effects is skipped after), in a batch too, and its
    /// writes still run.
    @Test func aGoneClientsQueuedRequestsRunOnlyForTheirEffects() throws {
        let harness = try InProcessServer(limits: Self.limits { $0.workPerTurn = 64 })
        harness.methods.costs[.exportCookies] = 30
        var peer: Peer? = try harness.connect()
        let set =
            #"{"jsonrpc":"2.0","id":2,"method":"handleSetCookie","params":{"url":"https://a.example/","setCookie":["a=1"]}}"#
        let export = #"{"jsonrpc":"2.0","id":1,"method":"exportCookies"}"#
        try peer?.send(String(repeating: export + "\n", count: 10))
        try peer?.send(set + "\n")
        let reads =
            [
                #""method":"reverse","params":{"address":"192.0.2.1"}"#,
                #""method":"getCookieHeader","params":{"url":"https://a.example/"}"#,
            ]
            + ["listCookies", "status", "showCache", "statistics", "metrics", "monitor", "rpc.discover"].map {
                #""method":"\#($0)""#
            }
        try peer?.send(reads.map { #"{"jsonrpc":"2.0","id":3,"# + $0 + "}\n" }.joined())
        try peer?.send("[" + export + "," + set + "]\n")
        peer = nil  // closes the socket before the server's first turn: it sees the lines and the hang-up together
        for _ in 0..<20 { harness.loop.runTurn(maxWaitMilliseconds: 5) }
        #expect(
            harness.methods.calls == [
                .exportCookies, .exportCookies, .exportCookies, .handleSetCookie, .handleSetCookie,
            ])
    }

    /// Taking an export's snapshot reads every byte of the jar (looking for TABs), which the
    /// jar's count does not tell: what it read is charged once it is known, so one uid's
    /// exports of a jar of 4 KB values run a few a turn, however many connections ask.
    @Test func anExportIsChargedForTheBytesItsSnapshotReads() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.workPerTurn = 64
                $0.workPerTurnPerUser = 512
            })
        harness.methods.exportedCookies = (0..<500).map { FakeMethods.cookie(bytes: 4_000, index: $0) }
        let peers = try (0..<8).map { _ in try harness.connect() }
        for peer in peers {
            try peer.send(String(repeating: #"{"jsonrpc":"2.0","method":"exportCookies"}"# + "\n", count: 4))
        }
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        let first = harness.methods.calls.count
        #expect((1...5).contains(first), "\(first) exports of 2 MB in one turn")
        #expect(harness.run(turns: 2_000) { harness.methods.calls.count == 32 })
    }

    /// The connections of one uid share one budget per turn: twenty units (its reads and lines)
    /// run in a turn however many connections hold them, and another user's request runs in
    /// that same turn.
    @Test func aUsersConnectionsShareOneBudgetPerTurn() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.workPerTurnPerUser = 20
                $0.workPerTurn = 64
            })
        let many = try (0..<5).map { _ in try harness.connect(uid: 1000) }
        let other = try harness.connect(uid: 1001)
        // Admitting the five spent 10 units of uid 1000's turn: two turns pay that off.
        for _ in 0..<2 { harness.loop.runTurn(maxWaitMilliseconds: 0) }
        for peer in many {
            try peer.send(String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"status"}"# + "\n", count: 10))
        }
        try other.send(other.request("status", id: 2))
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        // Each read costs one; which connections read first is epoll's order.
        #expect((15...20).contains(harness.methods.calls.count - 1), "\(harness.methods.calls.count) ran")
        other.receive()
        #expect(other.response(id: 2)?["result"] != nil, "answered in the same turn")
        #expect(harness.run { harness.methods.calls.count == 51 })
    }

    /// An answer far larger than the caps on unread output (here 20 MB, where a user's unread
    /// answers past 8 MiB get its connections closed) reaches a client that reads, whole: it is
    /// written from a snapshot as the client reads it.
    @Test func aLargeAnswerStreamsToAReaderWhateverItsSize() throws {
        let harness = try InProcessServer()
        harness.methods.listed = (0..<5_000).map { FakeMethods.cookie(bytes: 4_000, index: $0) }
        let peer = try harness.connect()
        try peer.send(peer.request("listCookies", id: 1))
        #expect(peer.awaitLines(1, turns: 20_000))
        #expect(!peer.reachedEOF)
        let cookies = try #require(peer.response(id: 1)?["result"]?["cookies"]?.arrayValue)
        #expect(cookies.count == 5_000)
        #expect(cookies.last?["name"] == "c4999")
        #expect(peer.bytesRead > 20_000_000)
        #expect(harness.server.load(of: getuid())?.unsentOutput == 0)
    }

    /// A client that does not read holds one piece of the answer unsent; the snapshot behind it
    /// is charged to its uid as memory; when it reads, the rest follows.
    @Test func aStreamedAnswerHeldByANonReaderCostsOnePiece() throws {
        let harness = try InProcessServer()
        harness.methods.listed = (0..<2_000).map { FakeMethods.cookie(bytes: 4_000, index: $0) }
        let peer = try harness.connect(sendBuffer: 4096)
        try peer.send(peer.request("listCookies", id: 1))
        for _ in 0..<50 { harness.loop.runTurn(maxWaitMilliseconds: 5) }
        let user = try #require(harness.server.load(of: getuid()))
        #expect(user.unsentOutput <= 2 * Connection.pieceSize + 8192, "unsent \(user.unsentOutput)")
        #expect(user.memory >= 8_000_000, "the snapshot is charged: \(user.memory)")
        #expect(user.memory <= 8_000_000 + 2_000 * 400 + (512 << 10), "charged \(user.memory)")
        #expect(peer.awaitLines(1, turns: 20_000))
        #expect(peer.response(id: 1)?["result"]?["cookies"]?.arrayValue?.count == 2_000)
        #expect(harness.run { harness.server.load(of: getuid())?.memory ?? 0 < 300_000 }, "released once written")
    }

    /// In a batch, a streamed answer is one element of the array line: the batch's line is
    /// whole and in order, with the other elements around it.
    @Test func aStreamedAnswerInABatchIsOneElementOfItsLine() throws {
        let harness = try InProcessServer()
        harness.methods.listed = (0..<300).map { FakeMethods.cookie(bytes: 1_000, index: $0) }
        let peer = try harness.connect()
        try peer.send(
            #"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","id":2,"method":"listCookies"},"#
                + #"{"jsonrpc":"2.0","method":"listCookies"},{"jsonrpc":"2.0","id":3,"method":"status"}]"# + "\n")
        try peer.send(peer.request("status", id: 4))
        #expect(peer.awaitLines(2))
        let batch = try #require(peer.responses.compactMap(\.arrayValue).first)
        #expect(batch.map { $0["id"] } == [1, 2, 3])
        #expect(batch[1]["result"]?["cookies"]?.arrayValue?.count == 300)
        #expect(peer.response(id: 4)?["result"] != nil)
    }

    /// A source that waits between lines (a subscription) lets the answers behind it pass, and
    /// writes again when it wakes: the streamed-answer mechanism carries a subscription too.
    @Test func aWaitingSourceLetsOtherAnswersPass() throws {
        let harness = try InProcessServer()
        let subscription = FakeSubscription()
        harness.methods.subscription = subscription
        let peer = try harness.connect()
        try peer.send(peer.request("rpc.discover", id: 1))
        #expect(peer.awaitLines(1))
        #expect(peer.lines.last == #"{"event":"opened"}"#)
        try peer.send(peer.request("status", id: 2))
        #expect(peer.awaitLines(2))
        #expect(peer.response(id: 2)?["result"] != nil)
        subscription.publish(#"{"event":"one"}"#)
        subscription.publish(#"{"event":"two"}"#)
        #expect(peer.awaitLines(4))
        #expect(Array(peer.lines.suffix(2)) == [#"{"event":"one"}"#, #"{"event":"two"}"#])
    }

    /// What a connection's input buffer holds is charged by capacity, and a buffer that a long
    /// (blank) line grew is given back once drained, whatever follows it.
    @Test func inputIsChargedByCapacityAndGivenBack() throws {
        let harness = try InProcessServer()
        let peer = try harness.connect(uid: 1000)
        let idle = try #require(harness.server.load(of: 1000)).memory
        #expect(peer.push(String(repeating: " ", count: 600_000)))
        #expect(harness.run { harness.server.load(of: 1000)!.memory > idle + 500_000 }, "charged while held")
        try peer.send("\nx")
        #expect(harness.run { harness.server.load(of: 1000)!.memory < idle + 32 << 10 }, "given back once drained")
    }

    /// Memory held by unfinished lines is released only by finishing them: past the uid's bound
    /// one connection at a time goes on to finish its line, so many connections each holding
    /// part of a long line all get through (they would wait for each other otherwise).
    @Test func unfinishedLinesPastTheBoundAreFinishedOneAtATime() throws {
        let harness = try InProcessServer(
            limits: Self.limits {
                $0.maxLineLength = 128 << 10
                $0.memoryPerUser = 1 << 20
            })
        let payload = Array((String(repeating: " ", count: 100_000) + "\nx").utf8)
        let peers = try (0..<30).map { _ in try harness.connect(uid: 1000) }
        var sent = [Int](repeating: 0, count: peers.count)
        var peak = 0
        let done = harness.run(turns: 5_000) {
            for (index, peer) in peers.enumerated() where sent[index] < payload.count {
                let n = payload.withUnsafeBytes { raw in
                    Glibc.send(
                        peer.fd.rawValue, raw.baseAddress! + sent[index], min(16 << 10, raw.count - sent[index]),
                        Int32(MSG_DONTWAIT))
                }
                if n > 0 { sent[index] += n }
            }
            peak = max(peak, harness.server.load(of: 1000)?.memory ?? 0)
            return sent.allSatisfy { $0 == payload.count }
                && (harness.server.load(of: 1000)?.memory ?? .max) < 30 * (32 << 10)
        }
        #expect(done, "sent \(sent.reduce(0, +)) of \(30 * payload.count)")
        // The bound, and one line finishing past it (its buffer grown by half).
        #expect(peak <= (1 << 20) + 3 * (128 << 10), "peak \(peak)")
    }
}

/// A stand-in for a subscription: writes an opening line, then each published line, waiting
/// in between.
final class FakeSubscription: AnswerSource {
    private var lines = [#"{"event":"opened"}"#]
    private var wake: () -> Void = {}

    func publish(_ line: String) {
        lines.append(line)
        wake()
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> AnswerProgress {
        guard !lines.isEmpty else { return .waiting }
        out.append(contentsOf: Array(lines.removeFirst().utf8) + [0x0A])
        return lines.isEmpty ? .waiting : .more
    }

    var heldBytes: Int { lines.reduce(0) { $0 + $1.utf8.count } }

    func attach(wake: @escaping () -> Void) { self.wake = wake }
}
