import HTTPDNSCore
import HTTPDNSProtocol
import Testing

@testable import HTTPDNSStore

/// What one transaction writes: per uid and cookie, its last change, in the order each cookie
/// was first changed; a lone change as it is.
struct LastChangesTests {
    typealias Fixture = StoreFixtures

    @Test func eachCookieKeepsItsLastChangeInFirstChangedOrder() {
        let a1 = Fixture.cookie("a", value: "1")
        let a2 = Fixture.cookie("a", value: "2")
        let b = Fixture.cookie("b")
        let batches = [
            StateBatch(uid: 1000, changes: [.upsert(a1), .upsert(b)]),
            StateBatch(uid: 1000, changes: []),
            StateBatch(uid: 1000, changes: [.upsert(a2)]),
            StateBatch(uid: 1001, changes: [.upsert(a1)]),
            StateBatch(uid: 1000, changes: [.delete(b.key)]),
        ]
        let changes = SQLiteStateStore.lastChanges(batches)
        #expect(changes.map(\.uid) == [1000, 1000, 1001])
        #expect(changes.map(\.change) == [.upsert(a2), .delete(b.key), .upsert(a1)])
    }

    @Test func aLoneChangeAmongEmptyBatches() {
        let a = Fixture.cookie("a")
        let batches = [
            StateBatch(uid: 1000, changes: []), StateBatch(uid: 1001, changes: [.upsert(a)]),
            StateBatch(uid: 1002, changes: []),
        ]
        let changes = SQLiteStateStore.lastChanges(batches)
        #expect(changes.map(\.uid) == [1001] && changes.map(\.change) == [.upsert(a)])
        #expect(SQLiteStateStore.lastChanges([StateBatch(uid: 1000, changes: [])]).isEmpty)
    }
}
