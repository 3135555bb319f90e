import HTTPDNSCore
import Testing

/// The group commit's order as a value: which batches share a transaction, when batches with
/// nothing to write are answered, and which failures they inherit.
struct GroupCommitOrderTests {
    typealias Order = GroupCommitOrder
    typealias Answer = Result<Void, StateCommitFailure>
    static let ok = Answer.success(())

    /// A batch's own failure, with the jar its store read back.
    static func failure(_ name: String) -> Answer {
        .failure(StateCommitFailure(error: StoreError(.diskFull, name), committedJar: []))
    }

    /// "ok", a failure's message, or "inherited" and the message when it has no jar of its own.
    static func names(_ answers: [Answer]) -> [String] {
        answers.map { answer in
            switch answer {
            case .success: return "ok"
            case .failure(let failure):
                return (failure.committedJar == nil ? "inherited " : "") + failure.error.message
            }
        }
    }

    static func committing(_ flush: Order.Flush) -> Int? {
        guard case .commit(let count) = flush else { return nil }
        return count
    }

    @Test func theBatchesOfOneTurnGoIntoOneTransaction() {
        var order = Order()
        #expect(order.handIn(hasNothingToWrite: false) == .flushAfterTurn)
        #expect(order.handIn(hasNothingToWrite: false) == .none)
        #expect(order.handIn(hasNothingToWrite: true) == .none)
        #expect(order.unansweredCount == 3)
        #expect(Self.committing(order.flush()) == 3)
        var results = [Self.ok, Self.ok, Self.ok]
        #expect(order.committed(&results) == .none)
        #expect(Self.names(results) == ["ok", "ok", "ok"])
        #expect(order.unansweredCount == 0)
    }

    /// While a transaction runs, later batches wait, then go together into the next one.
    @Test func batchesWaitForTheRunningTransaction() {
        var order = Order()
        _ = order.handIn(hasNothingToWrite: false)
        #expect(Self.committing(order.flush()) == 1)
        #expect(order.handIn(hasNothingToWrite: false) == .none)
        #expect(order.handIn(hasNothingToWrite: false) == .none)
        if case .nothing = order.flush() {} else { Issue.record("a second transaction while one runs") }
        var results = [Self.ok]
        #expect(order.committed(&results) == .flushAfterTurn)
        #expect(Self.committing(order.flush()) == 2)
        #expect(order.unansweredCount == 2)
    }

    /// Batches with nothing to write make no transaction: they are answered at the end of the turn,
    /// once nothing is running before them.
    @Test func nothingToWriteIsAnsweredWithoutATransaction() {
        var order = Order()
        #expect(order.handIn(hasNothingToWrite: true) == .flushAfterTurn)
        _ = order.handIn(hasNothingToWrite: true)
        guard case .answer(let answers) = order.flush() else {
            Issue.record("expected answers without a transaction")
            return
        }
        #expect(Self.names(answers) == ["ok", "ok"])
        #expect(order.unansweredCount == 0)
    }

    /// A batch with nothing to write relies on the batches handed in before it: it fails when one of
    /// them fails, in its transaction or an earlier one, and not for a failure after it.
    @Test func nothingToWriteInheritsTheFailuresBeforeIt() {
        var order = Order()
        _ = order.handIn(hasNothingToWrite: false)
        _ = order.handIn(hasNothingToWrite: true)
        _ = order.flush()
        var results: [Answer] = [Self.failure("full"), Self.ok]
        _ = order.committed(&results)
        #expect(Self.names(results) == ["full", "inherited full"])

        // Handed in while the failing transaction ran: answered after it, with its failure.
        _ = order.handIn(hasNothingToWrite: false)
        _ = order.flush()
        _ = order.handIn(hasNothingToWrite: true)
        results = [Self.failure("again")]
        #expect(order.committed(&results) == .flushAfterTurn)
        guard case .answer(let late) = order.flush() else {
            Issue.record("expected an answer without a transaction")
            return
        }
        #expect(Self.names(late) == ["inherited again"])

        // Within one transaction it goes by the transaction's failures, even one of a batch handed
        // in after it (erring towards failing it).
        _ = order.handIn(hasNothingToWrite: true)
        _ = order.handIn(hasNothingToWrite: false)
        _ = order.flush()
        results = [Self.ok, Self.failure("later")]
        _ = order.committed(&results)
        #expect(Self.names(results) == ["inherited later", "later"])

        // A failure in a later transaction is not its own.
        _ = order.handIn(hasNothingToWrite: false)
        _ = order.handIn(hasNothingToWrite: true)
        _ = order.flush()
        results = [Self.ok, Self.ok]
        _ = order.committed(&results)
        #expect(Self.names(results) == ["ok", "ok"])
        _ = order.handIn(hasNothingToWrite: false)
        _ = order.flush()
        results = [Self.failure("after")]
        _ = order.committed(&results)
        #expect(Self.names(results) == ["after"])
    }
}
