import HTTPDNSCollections
import HTTPDNSTestSupport
import Testing

/// The one heap behind the loop's timers and the cache's expiries.
struct BinaryHeapTests {
    /// An element ordered by `key`, ties broken by `serial` (as timers by id).
    struct Item: Comparable {
        var key: Int
        var serial: Int

        static func < (lhs: Item, rhs: Item) -> Bool {
            lhs.key != rhs.key ? lhs.key < rhs.key : lhs.serial < rhs.serial
        }
    }

    /// A random run of pushes, pops and removals against a sorted array.
    @Test func popsInOrderThroughARandomRun() {
        var generator = SeededGenerator(state: 25)
        var heap = BinaryHeap<Item>()
        var model: [Item] = []
        var serial = 0
        for step in 0..<5_000 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                serial += 1
                let item = Item(key: Int.random(in: 0..<50, using: &generator), serial: serial)
                heap.push(item)
                model.append(item)
            case 6..<9:
                let expected = model.min()
                #expect(heap.first == expected, "step \(step)")
                #expect(heap.popFirst() == expected, "step \(step)")
                if let expected { model.removeAll { $0 == expected } }
            default:
                let cut = Int.random(in: 0..<50, using: &generator)
                heap.removeAll { $0.key % 7 == cut % 7 }
                model.removeAll { $0.key % 7 == cut % 7 }
            }
            #expect(heap.count == model.count)
        }
        var drained: [Item] = []
        while let item = heap.popFirst() { drained.append(item) }
        #expect(drained == model.sorted())
        #expect(heap.isEmpty)
    }

    /// Equal keys come out in the order the tie-breaker says: first come, first served.
    @Test func equalKeysComeOutByTheirTieBreaker() {
        var heap = BinaryHeap<Item>()
        for serial in (1...20).reversed() { heap.push(Item(key: 5, serial: serial)) }
        heap.push(Item(key: 1, serial: 99))
        #expect(heap.popFirst()?.serial == 99)
        for serial in 1...20 { #expect(heap.popFirst()?.serial == serial) }
        heap.push(Item(key: 0, serial: 0))
        heap.removeAll()
        #expect(heap.first == nil)
    }
}
