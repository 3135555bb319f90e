/// A binary min-heap of (expiry, key) pairs, the priority queue behind earliest-expiry eviction.
///
/// Removal is lazy, as in systemd-resolved's `by_expiry` Prioq used with a hash map: when an entry
/// is replaced or flushed its old heap item stays behind and is recognised as dead because its
/// `serial` no longer matches the live entry's. The owner calls `compact(keeping:)` when dead items
/// outnumber live ones, so the heap stays O(live entries) and every operation stays O(log n).
struct ExpiryHeap<Key: Hashable> {
    struct Item {
        var expiresAt: MonotonicInstant
        var key: Key
        /// The insertion serial of the entry this item was pushed for.
        var serial: UInt64
    }

    private(set) var items: [Item] = []

    var count: Int { items.count }
    var first: Item? { items.first }

    mutating func push(_ item: Item) {
        items.append(item)
        siftUp(from: items.count - 1)
    }

    @discardableResult
    mutating func popFirst() -> Item? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        if !items.isEmpty { siftDown(from: 0) }
        return top
    }

    mutating func removeAll() {
        items.removeAll()
    }

    /// Drops every item for which `isLive` is false, then restores heap order in O(n).
    mutating func compact(keeping isLive: (Item) -> Bool) {
        items.removeAll { !isLive($0) }
        var index = items.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    private static func precedes(_ lhs: Item, _ rhs: Item) -> Bool {
        if lhs.expiresAt != rhs.expiresAt { return lhs.expiresAt < rhs.expiresAt }
        return lhs.serial < rhs.serial
    }

    private mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(items[child], items[parent]) else { return }
            items.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < items.count else { return }
            var smallest = left
            let right = left + 1
            if right < items.count, Self.precedes(items[right], items[left]) { smallest = right }
            guard Self.precedes(items[smallest], items[parent]) else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
