import Dispatch
import HTTPDNSCore
import Testing

@testable import HTTPDNSSQLite

struct GroupCommitTests {
    typealias F = StoreFixtures

    /// Everything queued while the writer is busy is applied in one transaction.
    @Test func writesQueuedFromManyThreadsShareOneTransaction() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        let gate = Rendezvous<Void>()
        let holding = Rendezvous<Void>()
        // Holds the writer until every commit is queued; queue only once it really is held, or the
        // first commits could ride along in the batch that carries the gate.
        store.enqueueOnWriter { _ in
            holding.fulfill(())
            gate.wait()
        }
        holding.wait()
        let before = store.committedTransactionCount
        let threads = 8
        let perThread = 25
        let counter = CompletionCounter()
        counter.expect(threads * perThread)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let cookie = F.cookie("t\(thread)-\(index)")
                store.commit([(uid: UInt32(thread), change: .upsert(cookie))], completion: counter.completion)
            }
        }
        gate.fulfill(())
        #expect(counter.wait())
        #expect(counter.errors.isEmpty)
        #expect(store.committedTransactionCount - before == 1)
        for thread in 0..<threads {
            let names = Set(try store.loadCookies(uid: UInt32(thread), now: F.now).map(\.name))
            #expect(names == Set((0..<perThread).map { "t\(thread)-\($0)" }))
        }
    }

    /// Clients that each wait for their acknowledgement before writing again, as connections do.
    @Test func concurrentClientsAllAcknowledgedAndStored() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        let threads = 8
        let perThread = 40
        let before = store.committedTransactionCount
        let failures = CompletionCounter()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let result = store.commitAndWait([
                    (uid: 500, change: .upsert(F.cookie("t\(thread)-\(index)"))),
                    (
                        uid: 500,
                        change: .delete(CookieKey(domain: "example.com", path: "/", name: "t\(thread)-\(index - 1)"))
                    ),
                ])
                if case .failure = result {
                    failures.expect(1)
                    failures.completion(result)
                }
            }
        }
        #expect(failures.errors.isEmpty)
        let names = Set(try store.loadCookies(uid: 500, now: F.now).map(\.name))
        #expect(names == Set((0..<threads).map { "t\($0)-\(perThread - 1)" }))
        let transactions = store.committedTransactionCount - before
        #expect(transactions >= 1 && transactions <= threads * perThread)
    }

    /// A write that fails is rolled back alone; the other writes of its group are committed.
    @Test func oneFailingWriteDoesNotFailItsGroup() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        store.onWriter { database in
            // Makes one particular cookie fail, as a disk error on its page would.
            try? database.execute(
                """
                CREATE TEMP TRIGGER refuse_poison BEFORE INSERT ON main.cookies WHEN NEW.name = 'poison'
                BEGIN SELECT RAISE(ABORT, 'refused'); END
                """)
        }
        let gate = Rendezvous<Void>()
        store.enqueueOnWriter { _ in gate.wait() }
        let good = Rendezvous<Result<Void, StoreError>>()
        let bad = Rendezvous<Result<Void, StoreError>>()
        let alsoGood = Rendezvous<Result<Void, StoreError>>()
        store.commit([(1, .upsert(F.cookie("good")))]) { good.fulfill($0) }
        store.commit([(1, .upsert(F.cookie("partial"))), (1, .upsert(F.cookie("poison")))]) { bad.fulfill($0) }
        store.commit([(1, .upsert(F.cookie("alsoGood")))]) { alsoGood.fulfill($0) }
        let before = store.committedTransactionCount
        gate.fulfill(())
        #expect(good.wait().failure == nil)
        #expect(bad.wait().failure != nil)
        #expect(alsoGood.wait().failure == nil)
        #expect(store.committedTransactionCount - before == 1)
        // "partial" came with "poison" in one batch: all or nothing.
        #expect(Set(try store.loadCookies(uid: 1, now: F.now).map(\.name)) == ["good", "alsoGood"])
    }
}
