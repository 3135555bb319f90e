import HTTPDNSRedis
import Testing

/// The reply reader: RESP2 read as bytes arrive, split anywhere, and never more than its limits.
struct RESPReaderTests {
    static func read(_ text: String, limits: RESPReader.Limits = RESPReader.Limits(), step: Int? = nil)
        -> [RESPReader.Outcome]
    {
        var reader = RESPReader(limits: limits)
        let bytes = Array(text.utf8)
        var outcomes: [RESPReader.Outcome] = []
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + (step ?? bytes.count))
            bytes[offset..<end].withUnsafeBytes { reader.feed($0) }
            offset = end
            while true {
                let outcome = reader.next()
                if outcome == .needMore { break }
                outcomes.append(outcome)
                if case .reply = outcome { continue }
                return outcomes
            }
        } while offset < bytes.count
        return outcomes
    }

    static let sample =
        "+OK\r\n-ERR wrong\r\n:-42\r\n$5\r\nhe\r\no\r\n$-1\r\n*-1\r\n*0\r\n"
        + "*2\r\n*2\r\n$1\r\na\r\n:1\r\n*1\r\n$0\r\n\r\n"

    static let expected: [RESPReader.Outcome] = [
        .reply(.status("OK")), .reply(.error("ERR wrong")), .reply(.integer(-42)), .reply(.bulk(Array("he\r\no".utf8))),
        .reply(.null), .reply(.null), .reply(.array([])),
        .reply(.array([.array([.bulk([UInt8(ascii: "a")]), .integer(1)]), .array([.bulk([])])])),
    ]

    @Test func everyTypeWholeOrSplitAtEveryByte() {
        #expect(Self.read(Self.sample) == Self.expected)
        for step in 1...7 { #expect(Self.read(Self.sample, step: step) == Self.expected, "step \(step)") }
    }

    /// A bulk string over the limit is refused from its header alone: none of its bytes are
    /// needed, and what came before it in its array is handed back, cut where it stopped.
    @Test func aBulkStringOverTheLimitIsNotRead() {
        let limits = RESPReader.Limits(maxBulkBytes: 10, maxReplyBytes: 1 << 20)
        let outcomes = Self.read("*2\r\n*2\r\n$2\r\nid\r\n*2\r\n$1\r\nc\r\n$300000000\r\nxx", limits: limits)
        #expect(
            outcomes == [
                .tooLarge(
                    partial: .array([
                        .array([
                            .bulk(Array("id".utf8)), .array([.bulk([UInt8(ascii: "c")]), RESPReader.truncated]),
                            RESPReader.truncated,
                        ]),
                        RESPReader.truncated,
                    ]), bulkTooLong: true)
            ])
    }

    /// Many small elements count too: a reply is bounded as a whole (bytes and elements).
    @Test func aReplyOverItsTotalIsCut() {
        let limits = RESPReader.Limits(maxBulkBytes: 1 << 20, maxReplyBytes: 1_000)
        let text = "*1000\r\n" + String(repeating: ":1\r\n", count: 1_000)
        guard case .tooLarge(let partial, let bulkTooLong)? = Self.read(text, limits: limits).last else {
            Issue.record("not cut")
            return
        }
        #expect(!bulkTooLong)
        #expect((partial.array?.count ?? 0) < 40 && partial.array?.last == RESPReader.truncated)
    }

    /// Nulls and empty arrays are elements too: an array of millions of them, four bytes each, was
    /// held until the command's deadline (charged nothing, the limit never tripped).
    @Test func nullsAndEmptyArraysCountAgainstTheTotal() {
        let limits = RESPReader.Limits(maxBulkBytes: 1 << 20, maxReplyBytes: 1_000)
        for element in ["*0\r\n", "*-1\r\n", "$-1\r\n"] {
            let text = "*2000000000\r\n" + String(repeating: element, count: 1_000)
            guard case .tooLarge(let partial, let bulkTooLong)? = Self.read(text, limits: limits).last else {
                Issue.record("\(element.debugDescription) x 1000 was not cut")
                continue
            }
            #expect(!bulkTooLong)
            #expect((partial.array?.count ?? 0) < 40 && partial.array?.last == RESPReader.truncated)
        }
    }

    /// A bulk string is charged when its header is read and taken back while its bytes are still
    /// coming, so one arriving a byte at a time costs what it costs when it arrives at once (the
    /// fuzzer found the byte-by-byte reading cut a reply the whole reading kept).
    @Test func aBulkStringArrivingByteByByteIsChargedOnce() {
        let limits = RESPReader.Limits(maxBulkBytes: 1_000, maxReplyBytes: 1_100)
        let text = "*1\r\n$1000\r\n" + String(repeating: "v", count: 1_000) + "\r\n"
        let expected: [RESPReader.Outcome] = [
            .reply(.array([.bulk(Array(repeating: UInt8(ascii: "v"), count: 1_000))]))
        ]
        #expect(Self.read(text, limits: limits) == expected)
        #expect(Self.read(text, limits: limits, step: 1) == expected)
    }

    @Test func malformedInputIsNamed() {
        for text in [
            "\r\n", "?x\r\n", ":12a\r\n", "$-2\r\n", "$3\r\nabcd\r\n", "*x\r\n",
            String(repeating: "*1\r\n", count: 40) + ":1\r\n",
        ] {
            guard case .malformed? = Self.read(text).last else {
                Issue.record("\(text.debugDescription) was not refused")
                continue
            }
        }
        // A line that never ends is refused once it is longer than any a server sends.
        guard case .malformed? = Self.read("+" + String(repeating: "a", count: 70_000)).last else {
            Issue.record("an endless line was not refused")
            return
        }
    }
}
