/// Splits a byte stream into `\n`-terminated lines with a size cap.
///
/// A trailing `\r` is dropped (`\r\n` is accepted), and lines holding only whitespace are
/// skipped. Once a line exceeds `maxLineLength` without a newline the framer reports
/// `.tooLong` and stays in that state: the caller answers and closes the connection.
public struct LineFramer {
    public enum Event {
        /// A complete, non-blank line (without its terminator), valid until the next call.
        case line(UnsafeBufferPointer<UInt8>)
        case tooLong
    }

    /// Storage kept between lines; a larger buffer (one long line) is released once drained, so
    /// an idle connection holds no more than this.
    static let retainedCapacity = 16 * 1024

    public let maxLineLength: Int
    private var buffer: [UInt8] = []
    /// Offset of the first byte not yet handed out.
    private var start = 0
    /// Where the newline search resumes (bytes before it hold no newline).
    private var scanned = 0
    /// The unfinished line holds a byte other than a space, tab or CR before `scanned`: a line
    /// is checked for blankness as it arrives, so finishing a long one costs nothing more.
    private var lineHasContent = false
    public private(set) var overflowed = false

    public init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    /// Bytes received but not yet handed out: complete lines not drained yet and the unfinished line.
    public var pendingByteCount: Int { buffer.count - start }

    /// Bytes of memory the framer holds.
    public var capacity: Int { buffer.capacity }

    /// Whether a complete line waits to be drained (a stopped `drainLines` may leave some).
    public var hasCompleteLine: Bool {
        guard !overflowed, scanned < buffer.count else { return false }
        let from = scanned
        return buffer.withUnsafeBufferPointer { Self.firstNewline(in: $0, from: from) } != nil
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfUseful()
        reserve(bytes.count)
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    public mutating func append(_ bytes: [UInt8]) {
        compactIfUseful()
        reserve(bytes.count)
        buffer.append(contentsOf: bytes)
    }

    /// Grows a large buffer by half rather than doubling it: a long line a client is still
    /// sending pins at most half again its bytes (what the server charges is the capacity), and
    /// a line arriving in reads of 64 KiB is copied a few times, not once per read.
    private mutating func reserve(_ count: Int) {
        let needed = buffer.count + count
        guard needed > buffer.capacity, needed > 64 * 1024 else { return }
        buffer.reserveCapacity(needed + max(needed / 2, 64 * 1024))
    }

    /// Calls `body` for each complete line and for an overflow; stops after `.tooLong`.
    public mutating func drain(_ body: (Event) -> Void) {
        drainLines(while: { event in
            body(event)
            return true
        })
    }

    /// Whether `bytes` holds only spaces, tabs and CRs, eight bytes a step (a blank line may be
    /// as long as a line may be).
    public static func isBlank(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Exact per byte (no borrow between bytes): a byte's high bit is set when it is not zero.
        func nonZero(_ word: UInt64) -> UInt64 {
            (((word & ~ByteWords.highBits) &+ ~ByteWords.highBits) | word) & ByteWords.highBits
        }
        func other(_ word: UInt64) -> UInt64 {
            nonZero(word ^ (ByteWords.ones &* 0x20)) & nonZero(word ^ (ByteWords.ones &* 0x09))
                & nonZero(word ^ (ByteWords.ones &* 0x0D))
        }
        return ByteWords.firstIndex(in: bytes, flags: other, isMatch: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) == nil
    }

    /// The offset of the first `\n` at or after `from`, eight bytes a step.
    static func firstNewline(in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        ByteWords.firstIndex(
            in: UnsafeBufferPointer(rebasing: bytes[from...]), flags: { ByteWords.equal($0, 0x0A) },
            isMatch: { $0 == 0x0A }
        ).map { from + $0 }
    }

    /// Calls `body` for each complete line and for an overflow, until it returns false (the line
    /// it was given counts as handed out) or `.tooLong`. Returns false when it stopped because
    /// `body` said so: more complete lines may be waiting for the next call.
    @discardableResult
    public mutating func drainLines(while body: (Event) -> Bool) -> Bool {
        drainLines(while: { event, _ in body(event) })
    }

    /// `drainLines(while:)`, also telling `body` whether the line is the last byte received
    /// (nothing, not even part of a line, follows it): a server may answer it at once.
    @discardableResult
    public mutating func drainLines(while body: (_ event: Event, _ endsInput: Bool) -> Bool) -> Bool {
        guard !overflowed else { return true }
        while true {
            let end = buffer.count
            let from = scanned
            let newline = buffer.withUnsafeBufferPointer { Self.firstNewline(in: $0, from: from) }
            guard let lineEnd = newline else {
                if !lineHasContent {
                    lineHasContent = !buffer.withUnsafeBufferPointer {
                        Self.isBlank(UnsafeBufferPointer(rebasing: $0[from..<end]))
                    }
                }
                scanned = end
                // A trailing \r may be the first half of this line's \r\n: it is not content.
                let pending = end - start - (end > start && buffer[end - 1] == 0x0D ? 1 : 0)
                if pending > maxLineLength {
                    overflowed = true
                    _ = body(.tooLong, true)
                } else if start == end {
                    releaseIfDrained()
                } else {
                    shrinkIfSparse()
                }
                return true
            }
            var contentEnd = lineEnd
            if contentEnd > start && buffer[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            let lineStart = start
            start = lineEnd + 1
            scanned = start
            if contentEnd - lineStart > maxLineLength {
                overflowed = true
                _ = body(.tooLong, true)
                return true
            }
            // Only the bytes not looked at before (a CR already seen is blank either way).
            let blank =
                !lineHasContent
                && buffer.withUnsafeBufferPointer {
                    Self.isBlank(UnsafeBufferPointer(rebasing: $0[from..<max(from, contentEnd)]))
                }
            lineHasContent = false
            if !blank {
                let proceed = buffer.withUnsafeBufferPointer { all in
                    body(.line(UnsafeBufferPointer(rebasing: all[lineStart..<contentEnd])), lineEnd + 1 == end)
                }
                if !proceed { return false }
            }
        }
    }

    /// Everything was handed out: start over at offset 0, dropping an outsized buffer.
    private mutating func releaseIfDrained() {
        if buffer.capacity > Self.retainedCapacity {
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        start = 0
        scanned = 0
        lineHasContent = false
    }

    /// A large buffer that now holds little (a long line drained, the start of the next one
    /// kept) is replaced by one that fits what is left: what a connection holds is its
    /// buffer's capacity, not its content.
    private mutating func shrinkIfSparse() {
        let pending = buffer.count - start
        guard buffer.capacity > Self.retainedCapacity, pending * 4 < buffer.capacity else { return }
        var kept: [UInt8] = []
        kept.reserveCapacity(max(pending, Self.retainedCapacity))
        kept.append(contentsOf: buffer[start...])
        buffer = kept
        scanned -= start
        start = 0
    }

    private mutating func compactIfUseful() {
        if start > 0 && (start == buffer.count || start >= 64 * 1024) {
            buffer.removeSubrange(0..<start)
            scanned -= start
            start = 0
        }
    }
}
