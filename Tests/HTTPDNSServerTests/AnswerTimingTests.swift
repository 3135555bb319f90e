import HTTPDNSProtocol
import HTTPDNSSystem
import Testing

@testable import HTTPDNSServer

/// When answers leave: a lone request's as soon as it is written, before the request's own
/// after-work and the rest of the turn (what a client waiting on one answer at a time waits
/// for); under load, together at the end of the turn, one send per connection.
@Suite struct AnswerTimingTests {
    @Test func aLoneRequestIsAnsweredBeforeItsCallReturns() throws {
        let harness = try InProcessServer()
        let client = try harness.connect()
        var waitingAfterAnswer: [Int] = []
        harness.methods.afterResolveAnswered = { _ in waitingAfterAnswer.append(client.linesWaiting()) }
        try client.send(client.request("resolve", id: 1, ["host": "a.example"]))
        #expect(client.awaitLines(1))
        #expect(waitingAfterAnswer == [1], "the answer was in the client's socket while the call went on")
    }

    /// Lines that arrived together are answered together: the answers of the first lines wait
    /// for the last one's, then leave in one send.
    @Test func pipelinedRequestsAreAnsweredTogetherAfterTheLast() throws {
        let harness = try InProcessServer()
        let client = try harness.connect()
        var waitingAfterAnswer: [Int] = []
        harness.methods.afterResolveAnswered = { _ in waitingAfterAnswer.append(client.linesWaiting()) }
        let lines = (1...3).map { client.request("resolve", id: .int($0), ["host": "a.example"]) }
        try client.send(lines.map { $0.encodedString + "\n" }.joined())
        #expect(client.awaitLines(3))
        #expect(waitingAfterAnswer == [0, 0, 3])
    }

    /// A line followed by part of the next is not the end of what was received: its answer
    /// waits for the end of the turn.
    @Test func aRequestFollowedByPartOfTheNextIsAnsweredAtTheEndOfTheTurn() throws {
        let harness = try InProcessServer()
        let client = try harness.connect()
        var waitingAfterAnswer: [Int] = []
        harness.methods.afterResolveAnswered = { _ in waitingAfterAnswer.append(client.linesWaiting()) }
        try client.send(client.request("resolve", id: 1, ["host": "a.example"]).encodedString + "\n{\"jsonrpc\"")
        #expect(client.awaitLines(1))
        #expect(waitingAfterAnswer == [0])
    }

    /// A socket found full is retried at the turn's end only; once the client has read it all,
    /// a lone request is answered at once again.
    @Test func afterTheSocketWasFullALoneRequestIsAnsweredAtOnceAgain() throws {
        let harness = try InProcessServer()
        let client = try harness.connect(sendBuffer: 4096)
        let many = (1...2_000).map { client.request("resolve", id: .int($0), ["host": "a.example"]) }
        #expect(client.push(many.map { $0.encodedString + "\n" }.joined()))
        #expect(client.awaitLines(2_000, turns: 2_000))
        var waitingAfterAnswer: [Int] = []
        harness.methods.afterResolveAnswered = { _ in waitingAfterAnswer.append(client.linesWaiting()) }
        try client.send(client.request("resolve", id: 0, ["host": "a.example"]))
        #expect(client.awaitLines(2_001))
        #expect(waitingAfterAnswer == [1])
    }

    /// With more than one connection ready in a turn, every answer leaves at the turn's end.
    @Test func requestsOfSeveralReadyConnectionsAreAnsweredAtTheEndOfTheTurn() throws {
        let harness = try InProcessServer()
        let clients = try (0..<3).map { _ in try harness.connect() }
        // Admitted and registered before any of them sends.
        harness.run(turns: 3) { false }
        var waitingAfterAnswer: [Int] = []
        harness.methods.afterResolveAnswered = { params in
            let index = Int(params.host.dropFirst().prefix(while: { $0 != "." }))!
            waitingAfterAnswer.append(clients[index].linesWaiting())
        }
        for (index, client) in clients.enumerated() {
            try client.send(client.request("resolve", id: 1, ["host": .string("c\(index).example")]))
        }
        harness.loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(waitingAfterAnswer == [0, 0, 0])
        for client in clients { #expect(client.awaitLines(1)) }
    }
}
