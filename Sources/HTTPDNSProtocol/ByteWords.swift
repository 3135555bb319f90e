/// Byte tests eight bytes at a time (SWAR) for the scanners of request lines and URLs.
///
/// Each test sets the high bit of the lowest byte that passes it, exactly: the borrow of
/// `(x - 0x01…) & ~x & 0x80…` only runs upward, so flags above the first may be false. An OR of
/// tests is therefore exact at its lowest flag too, which is the only one anybody reads.
public enum ByteWords {
    // Computed, so that code inlined into other modules folds them to constants.
    @inlinable public static var ones: UInt64 { 0x0101_0101_0101_0101 }
    @inlinable public static var highBits: UInt64 { 0x8080_8080_8080_8080 }

    /// The eight bytes at `offset`, the first in the lowest byte.
    @inlinable @inline(__always)
    public static func load(_ base: UnsafePointer<UInt8>, at offset: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
    }

    @inlinable @inline(__always)
    public static func equal(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        let difference = word ^ (ones &* UInt64(byte))
        return (difference &- ones) & ~difference & highBits
    }

    /// Bytes below `bound` (at most 0x80).
    @inlinable @inline(__always)
    public static func below(_ word: UInt64, _ bound: UInt8) -> UInt64 {
        (word &- ones &* UInt64(bound)) & ~word & highBits
    }

    /// Bytes of 0x80 and above (not ASCII).
    @inlinable @inline(__always)
    public static func nonASCII(_ word: UInt64) -> UInt64 { word & highBits }

    /// The offset in the word of its lowest flagged byte; `flags` is not 0.
    @inlinable @inline(__always)
    public static func firstFlagged(_ flags: UInt64) -> Int { flags.trailingZeroBitCount / 8 }

    /// The offset of the first byte in `bytes` that `flags` marks in its word (`isMatch` says the
    /// same of one byte, for buffers under a word). The last word ends with the buffer,
    /// overlapping the one before: the bytes they share were clean, so its first flag is still
    /// the first match.
    @inlinable @inline(__always)
    public static func firstIndex(
        in bytes: UnsafeBufferPointer<UInt8>, flags: (UInt64) -> UInt64, isMatch: (UInt8) -> Bool
    ) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        guard count >= 8 else {
            for i in 0..<count where isMatch(base[i]) { return i }
            return nil
        }
        var offset = 0
        while true {
            let at = min(offset, count - 8)
            let found = flags(load(base, at: at))
            if found != 0 { return at + firstFlagged(found) }
            if at == count - 8 { return nil }
            offset += 8
        }
    }
}
