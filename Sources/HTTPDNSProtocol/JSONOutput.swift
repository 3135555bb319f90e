/// A growable buffer that JSON is written into, each piece one copy into memory it owns.
///
/// The daemon writes every response into a connection's `JSONOutput` and sends from it. An
/// `[UInt8]`'s `append` costs about 30 ns a call here whatever its size (the generic sequence
/// path and a uniqueness check), and a response is some thirty pieces: a tenth of a cache hit's
/// whole time. Here a piece is a capacity check and a `memcpy`.
///
/// Not copyable: one owner frees the memory, and nothing copies a buffer by accident.
public struct JSONOutput: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var storedCount = 0
    @usableFromInline var storedCapacity: Int

    /// The capacity a buffer starts with and keeps when emptied.
    public static let initialCapacity = 256

    public init(capacity: Int = JSONOutput.initialCapacity) {
        storedCapacity = max(capacity, 16)
        base = .allocate(capacity: storedCapacity)
    }

    deinit { base.deallocate() }

    /// Bytes written and not removed.
    public var count: Int { storedCount }
    public var isEmpty: Bool { storedCount == 0 }
    /// Bytes it can hold before it grows.
    public var capacity: Int { storedCapacity }

    @inlinable
    public mutating func append(_ byte: UInt8) {
        if storedCount == storedCapacity { grow(toHold: 1) }
        base[storedCount] = byte
        storedCount += 1
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if storedCapacity - storedCount < bytes.count { grow(toHold: bytes.count) }
        UnsafeMutableRawPointer(base + storedCount).copyMemory(from: source, byteCount: bytes.count)
        storedCount += bytes.count
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    /// `"`, `bytes`, `"`: one capacity check for the three.
    @inlinable
    public mutating func appendQuoted(_ bytes: UnsafeBufferPointer<UInt8>) {
        if storedCapacity - storedCount < bytes.count + 2 { grow(toHold: bytes.count + 2) }
        base[storedCount] = UInt8(ascii: "\"")
        if let source = bytes.baseAddress, !bytes.isEmpty {
            (base + storedCount + 1).update(from: source, count: bytes.count)
        }
        base[storedCount + 1 + bytes.count] = UInt8(ascii: "\"")
        storedCount += bytes.count + 2
    }

    public mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The bytes written, for the length of `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: storedCount))
    }

    /// A copy of the bytes written.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Empties the buffer; without `keepingCapacity`, a large one gives its memory back.
    public mutating func removeAll(keepingCapacity: Bool = false) {
        storedCount = 0
        if !keepingCapacity && storedCapacity > Self.initialCapacity { reallocate(capacity: Self.initialCapacity) }
    }

    /// Drops the first `n` bytes (those sent), moving the rest to the front.
    public mutating func removeFirst(_ n: Int) {
        precondition(n >= 0 && n <= storedCount, "cannot remove more bytes than are written")
        UnsafeMutableRawPointer(base).copyMemory(from: base + n, byteCount: storedCount - n)
        storedCount -= n
    }

    /// Room for `extra` more bytes: at least doubles, so appending stays amortized constant time.
    @usableFromInline
    mutating func grow(toHold extra: Int) {
        let (needed, overflow) = storedCount.addingReportingOverflow(extra)
        precondition(!overflow, "JSONOutput size overflow")
        reallocate(capacity: max(needed, storedCapacity * 2))
    }

    private mutating func reallocate(capacity newCapacity: Int) {
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        moved.initialize(from: base, count: storedCount)
        base.deallocate()
        base = moved
        storedCapacity = newCapacity
    }
}
