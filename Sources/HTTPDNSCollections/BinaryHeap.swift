/// A binary min-heap: `first` is the least element by `<`, and `push` and `popFirst` are
/// O(log n). The one priority queue of the project: the event loop's timers and the DNS cache's
/// expiries.
///
/// Elements that break ties (a serial, an id) come out in the order those say, so equal
/// deadlines fire first-come first-served. Removal of an arbitrary element is left to the
/// owner, lazily: it marks the element dead, drops dead ones it finds at the top, and calls
/// `removeAll(where:)` when the dead ones outnumber the live (as systemd-resolved's `by_expiry`
/// Prioq is used with its hash map).
public struct BinaryHeap<Element: Comparable> {
    @usableFromInline var elements: [Element] = []

    /// An empty heap.
    @inlinable public init() {}

    /// Elements held, live or not.
    @inlinable public var count: Int { elements.count }

    /// Whether the heap holds nothing.
    @inlinable public var isEmpty: Bool { elements.isEmpty }

    /// The least element, without removing it.
    @inlinable public var first: Element? { elements.first }

    /// Adds `element`.
    @inlinable public mutating func push(_ element: Element) {
        elements.append(element)
        siftUp(from: elements.count - 1)
    }

    /// Removes and returns the least element.
    @inlinable @discardableResult public mutating func popFirst() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let top = elements.removeLast()
        if !elements.isEmpty { siftDown(from: 0) }
        return top
    }

    /// Empties the heap.
    @inlinable public mutating func removeAll() {
        elements.removeAll()
    }

    /// Drops every element `shouldRemove` says to, then restores heap order in O(n).
    @inlinable public mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        elements.removeAll(where: shouldRemove)
        var index = elements.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    @inlinable mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child] < elements[parent] else { return }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < elements.count else { return }
            var least = left
            let right = left + 1
            if right < elements.count, elements[right] < elements[left] { least = right }
            guard elements[least] < elements[parent] else { return }
            elements.swapAt(parent, least)
            parent = least
        }
    }
}

extension BinaryHeap: Sendable where Element: Sendable {}
