/// Reads RESP2 replies from bytes as they arrive, holding no more than its limits.
///
/// hiredis's reader keeps a bulk string of any length until it is whole (its `maxbuf` bounds
/// only the idle buffer), so a value someone wrote into Redis decides how much this process
/// holds. This one stops at a bulk string longer than `maxBulkBytes`, or a reply taking more
/// than `maxReplyBytes`, without reading it, and hands back what it had: the caller drops the
/// connection (the rest of the reply is never read) and may skip what did not fit.
public struct RESPReader: Sendable {
    /// What one reply may hold.
    public struct Limits: Sendable, Equatable {
        /// The longest bulk string read.
        public var maxBulkBytes: Int
        /// What one reply may take in all: its bytes, and 32 for each element (its place in memory).
        public var maxReplyBytes: Int
        /// Nested arrays deeper than this are malformed for every command the fleet sends.
        public var maxDepth: Int

        public init(maxBulkBytes: Int = 512 << 10, maxReplyBytes: Int = 8 << 20, maxDepth: Int = 16) {
            self.maxBulkBytes = maxBulkBytes
            self.maxReplyBytes = maxReplyBytes
            self.maxDepth = maxDepth
        }
    }

    /// The result of `next()`.
    public enum Outcome: Sendable, Equatable {
        /// A whole reply.
        case reply(RedisReply)
        /// More bytes are needed.
        case needMore
        /// The reply does not fit the limits: what was read of it, each array cut short ending
        /// in `RESPReader.truncated`; `bulkTooLong` when a bulk string was over its limit (the
        /// element holding it is what did not fit), false when the reply as a whole was.
        case tooLarge(partial: RedisReply, bulkTooLong: Bool)
        /// Not RESP.
        case malformed(String)
    }

    /// The element that ends an array cut short in a `.tooLarge` partial reply.
    public static let truncated = RedisReply.error("\u{0}truncated")

    public let limits: Limits
    private var buffer: [UInt8] = []
    private var position = 0
    /// Arrays being read: how many elements each still expects, and those read.
    private var open: [(remaining: Int, elements: [RedisReply])] = []
    /// What the reply being read has taken so far.
    private var taken = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes received and not yet part of a returned reply.
    public var bufferedByteCount: Int { buffer.count - position }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        if position > 0 && (position == buffer.count || position >= 64 << 10) {
            buffer.removeSubrange(0..<position)
            position = 0
        }
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    /// Starts over (after the connection was dropped).
    public mutating func reset() {
        self = RESPReader(limits: limits)
    }

    /// The next whole reply, if the bytes hold one.
    public mutating func next() -> Outcome {
        while true {
            let start = position
            let value: RedisReply
            switch readValue() {
            case .needMore:
                position = start
                return .needMore
            case .malformed(let why):
                return .malformed(why)
            case .tooLarge(let bulk):
                return .tooLarge(partial: closeOpenArrays(), bulkTooLong: bulk)
            case .openedArray:
                continue
            case .value(let read):
                value = read
            }
            // Place the value in the innermost open array, closing every array it completes.
            var completed = value
            while true {
                guard !open.isEmpty else {
                    taken = 0
                    return .reply(completed)
                }
                open[open.count - 1].elements.append(completed)
                open[open.count - 1].remaining -= 1
                guard open[open.count - 1].remaining == 0 else { break }
                completed = .array(open.removeLast().elements)
            }
        }
    }

    private enum Step {
        case value(RedisReply)
        case openedArray
        case needMore
        case tooLarge(bulk: Bool)
        case malformed(String)
    }

    /// Reads one value, or the header of a non-empty array (pushed on `open`).
    private mutating func readValue() -> Step {
        guard let lineEnd = lineEnd(from: position) else {
            // A header line longer than any number or status the fleet reads is not RESP to us.
            if buffer.count - position > 64 << 10 { return .malformed("a line without CRLF") }
            return .needMore
        }
        guard lineEnd > position else { return .malformed("an empty line") }
        let type = buffer[position]
        let line = Array(buffer[(position + 1)..<lineEnd])
        let afterLine = lineEnd + 2
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"):
            guard charge(afterLine - position) else { return .tooLarge(bulk: false) }
            position = afterLine
            let text = String(decoding: line, as: UTF8.self)
            if type == UInt8(ascii: "+") { return .value(.status(text)) }
            if type == UInt8(ascii: "-") { return .value(.error(text)) }
            guard let number = Int64(text) else { return .malformed("an integer that is not one") }
            return .value(.integer(number))
        case UInt8(ascii: "$"):
            guard let length = Int(String(decoding: line, as: UTF8.self)), length >= -1 else {
                return .malformed("a bulk length that is not one")
            }
            if length == -1 {
                // Charged like any element: a reply of millions of nulls holds their places.
                guard charge(afterLine - position) else { return .tooLarge(bulk: false) }
                position = afterLine
                return .value(.null)
            }
            guard length <= limits.maxBulkBytes else { return .tooLarge(bulk: true) }
            // Charged before its bytes arrive, so a reply too large is refused from its header;
            // taken back while it is incomplete, or every partial read would charge it again.
            let cost = afterLine - position + length + 2
            guard charge(cost) else { return .tooLarge(bulk: false) }
            guard buffer.count >= afterLine + length + 2 else {
                uncharge(cost)
                return .needMore
            }
            guard buffer[afterLine + length] == 0x0D, buffer[afterLine + length + 1] == 0x0A else {
                return .malformed("a bulk string without its CRLF")
            }
            position = afterLine + length + 2
            return .value(.bulk(Array(buffer[afterLine..<(afterLine + length)])))
        case UInt8(ascii: "*"):
            guard let count = Int(String(decoding: line, as: UTF8.self)), count >= -1 else {
                return .malformed("an array length that is not one")
            }
            let headerBytes = afterLine - position
            position = afterLine
            // Charged before anything else, a null or empty array too, as any element is.
            guard charge(headerBytes) else { return .tooLarge(bulk: false) }
            if count == -1 { return .value(.null) }
            if count == 0 { return .value(.array([])) }
            guard open.count < limits.maxDepth else { return .malformed("arrays nested too deep") }
            open.append((count, []))
            return .openedArray
        default:
            return .malformed("a reply of unknown type \(type)")
        }
    }

    /// Counts `bytes` (and an element's place) against the reply's limit.
    private mutating func charge(_ bytes: Int) -> Bool {
        taken += bytes + 32
        return taken <= limits.maxReplyBytes
    }

    private mutating func uncharge(_ bytes: Int) {
        taken -= bytes + 32
    }

    /// The offset of the CR of the first CRLF at or after `from`.
    private func lineEnd(from: Int) -> Int? {
        var index = from
        while index + 1 < buffer.count {
            if buffer[index] == 0x0D && buffer[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }

    /// The reply read so far, each open array closed with `truncated`.
    private mutating func closeOpenArrays() -> RedisReply {
        var partial: RedisReply?
        while let frame = open.popLast() {
            var elements = frame.elements
            if let partial { elements.append(partial) }
            elements.append(Self.truncated)
            partial = .array(elements)
        }
        return partial ?? Self.truncated
    }
}
