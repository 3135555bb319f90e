import HTTPDNSProtocol
import Testing

/// What a framer handed out, copied (its line buffers are only valid during the callback).
enum FramedEvent: Equatable, CustomStringConvertible {
    case line([UInt8])
    case tooLong

    static func text(_ s: String) -> FramedEvent { .line(Array(s.utf8)) }

    var description: String {
        switch self {
        case .line(let bytes): return "line(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .tooLong: return "tooLong"
        }
    }
}

extension LineFramer {
    mutating func drainAll() -> [FramedEvent] {
        var events: [FramedEvent] = []
        drain { event in
            switch event {
            case .line(let buffer): events.append(.line(Array(buffer)))
            case .tooLong: events.append(.tooLong)
            }
        }
        return events
    }

    /// Appends each chunk and drains after it, as a connection does after each read.
    mutating func feed(_ chunks: [[UInt8]]) -> [FramedEvent] {
        var events: [FramedEvent] = []
        for chunk in chunks {
            append(chunk)
            events += drainAll()
        }
        return events
    }
}

/// The contract's framing (httpdnsd-rpc(7), FRAMING): one message per `\n`-terminated line, blank lines ignored, over-long lines refused.
struct LineFramerTests {
    static let stream = Array("{\"a\":1}\n[2]\r\n\n   \n\t\r\n \r\nx\ry\nlast\n".utf8)
    static let expected: [FramedEvent] = [.text("{\"a\":1}"), .text("[2]"), .text("x\ry"), .text("last")]

    @Test func oneAppend() {
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed([Self.stream]) == Self.expected)
        #expect(framer.pendingByteCount == 0)
    }

    /// The newline search reads eight bytes a step: lines of every length from 1 to 40 bytes,
    /// holding every byte value but the newline, so each newline falls at every place in a word
    /// and every other byte (0x0B, 0x8A, 0xFF…) sits next to one.
    @Test func everyLineLengthAndByteValueAroundTheNewline() {
        var stream: [UInt8] = []
        var expected: [FramedEvent] = []
        var next: UInt8 = 0
        for length in 1...40 {
            for _ in 0..<3 {
                var line: [UInt8] = []
                while line.count < length {
                    next &+= 1
                    if next != 0x0A && next != 0x0D && next != 0x20 && next != 0x09 { line.append(next) }
                }
                stream += line + [0x0A]
                expected.append(.line(line))
            }
        }
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed([stream]) == expected)
        for offset in 1..<9 {
            var shifted = LineFramer(maxLineLength: 64)
            #expect(
                shifted.feed([Array(stream[..<offset]), Array(stream[offset...])]) == expected, "split at \(offset)")
        }
    }

    @Test func splitAtEveryByteBoundary() {
        for cut in 0...Self.stream.count {
            var framer = LineFramer(maxLineLength: 64)
            let events = framer.feed([Array(Self.stream[..<cut]), Array(Self.stream[cut...])])
            #expect(events == Self.expected, "cut at \(cut)")
        }
    }

    @Test func splitAtEveryPairOfByteBoundaries() {
        let count = Self.stream.count
        for first in 0...count {
            for second in first...count {
                var framer = LineFramer(maxLineLength: 64)
                let chunks = [
                    Array(Self.stream[..<first]), Array(Self.stream[first..<second]), Array(Self.stream[second...]),
                ]
                #expect(framer.feed(chunks) == Self.expected, "cuts at \(first), \(second)")
            }
        }
    }

    @Test func oneByteAtATime() {
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed(Self.stream.map { [$0] }) == Self.expected)
    }

    @Test func rawBufferAppend() {
        var framer = LineFramer(maxLineLength: 64)
        Self.stream.withUnsafeBytes { framer.append($0) }
        #expect(framer.drainAll() == Self.expected)
    }

    @Test func partialLineIsHeldUntilItsNewline() {
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed([Array("abc".utf8)]) == [])
        #expect(framer.pendingByteCount == 3)
        #expect(framer.feed([Array("def".utf8)]) == [])
        #expect(framer.feed([Array("\n".utf8)]) == [.text("abcdef")])
        #expect(framer.pendingByteCount == 0)
    }

    @Test(arguments: ["\n", "\r\n", " \n", "\t\n", "  \t \r\n", "\n\n\n"])
    func blankLinesAreSkipped(_ blank: String) {
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed([Array("\(blank)a\n\(blank)b\n\(blank)".utf8)]) == [.text("a"), .text("b")])
    }

    /// Blankness is read eight bytes a step and exactly per byte: every other byte, at every
    /// offset, after any run of whitespace (a byte one above a space, right after one, is where a
    /// borrowing word trick would err), makes a line not blank.
    @Test func blanknessIsExactAtEveryOffset() {
        let whitespace: [UInt8] = [0x20, 0x09, 0x0D]
        for length in 1...24 {
            var line = (0..<length).map { whitespace[$0 % 3] }
            #expect(line.withUnsafeBufferPointer(LineFramer.isBlank))
            for offset in 0..<length {
                for byte in [0x00, 0x01, 0x08, 0x0A, 0x0C, 0x0E, 0x1F, 0x21, 0x2C, 0x41, 0x7F, 0x80, 0xA0, 0xFF]
                    as [UInt8]
                {
                    let kept = line[offset]
                    line[offset] = byte
                    #expect(!line.withUnsafeBufferPointer(LineFramer.isBlank), "\(byte) at \(offset) of \(length)")
                    line[offset] = kept
                }
            }
        }
    }

    /// Blankness is decided as a line arrives: content in any piece of it, before or after
    /// whitespace, makes it a line; whitespace in every piece makes it skipped.
    @Test func blanknessAcrossPieces() {
        for pieces in [["  a", "   ", "\n"], ["   ", "  a\r", "\n"], ["\t", " ", "\r", "\n"], ["", " x", "\r\n"]] {
            var framer = LineFramer(maxLineLength: 64)
            let line = String(pieces.joined().filter { $0 != "\r" && $0 != "\n" && $0 != "\r\n" })
            let expected: [FramedEvent] = line.allSatisfy { $0 == " " || $0 == "\t" } ? [] : [.text(line)]
            #expect(framer.feed(pieces.map { Array($0.utf8) }) == expected, "\(pieces)")
        }
    }

    /// A long blank line followed by the start of the next leaves no large buffer behind: what a
    /// connection holds is charged by capacity.
    @Test func aLongBlankLineLeavesNoLargeBufferBehind() {
        var framer = LineFramer(maxLineLength: 2 << 20)
        #expect(framer.feed([[UInt8](repeating: 0x20, count: 1 << 20), Array("\nx".utf8)]) == [])
        #expect(framer.pendingByteCount == 1)
        #expect(framer.capacity <= 64 << 10, "capacity \(framer.capacity) for one byte")
        #expect(framer.feed([Array("y\n".utf8)]) == [.text("xy")])
    }

    @Test func crlfTerminatorIsRemovedButInnerSpacesKept() {
        var framer = LineFramer(maxLineLength: 64)
        #expect(framer.feed([Array(" a b \r\n".utf8)]) == [.text(" a b ")])
    }

    @Test func manyLinesInOneAppend() {
        let lines = (0..<1000).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"status"}"# }
        var framer = LineFramer(maxLineLength: 128)
        let events = framer.feed([Array((lines.joined(separator: "\n") + "\n").utf8)])
        #expect(events == lines.map(FramedEvent.text))
    }

    /// Only a line whose newline is the last byte received ends the input: one followed by
    /// another line, by part of one, or by blank lines does not (the server sends its answer at
    /// once only for such a line).
    @Test(arguments: [
        ("a\n", [true]),
        ("a\nb\n", [false, true]),
        ("a\r\n", [true]),
        ("a\nb", [false]),
        ("a\n\n", [false]),
        ("a\n  \r\nb\n", [false, true]),
    ])
    func aLineEndsTheInputOnlyWhenNothingFollowsIt(input: String, expected: [Bool]) {
        var framer = LineFramer(maxLineLength: 128)
        framer.append(Array(input.utf8))
        var endsInput: [Bool] = []
        framer.drainLines(while: { event, ends in
            if case .line = event { endsInput.append(ends) }
            return true
        })
        #expect(endsInput == expected)
    }

    @Test func theRestOfALineArrivingEndsTheInputAgain() {
        var framer = LineFramer(maxLineLength: 128)
        var endsInput: [Bool] = []
        for chunk in ["a\nb", "c\n"] {
            framer.append(Array(chunk.utf8))
            framer.drainLines(while: { event, ends in
                if case .line = event { endsInput.append(ends) }
                return true
            })
        }
        #expect(endsInput == [false, true])
    }

    /// More than 64 KiB through the framer in odd-sized reads, so its buffer compacts with a partial line pending.
    @Test func longStreamInOddChunks() {
        let lines = (0..<300).map { i in
            String(repeating: Character(Unicode.Scalar(UInt8(65 + i % 26))), count: 700 + i)
        }
        let stream = Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
        var framer = LineFramer(maxLineLength: 4096)
        var chunks: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 777)
            chunks.append(Array(stream[offset..<end]))
            offset = end
        }
        #expect(framer.feed(chunks) == lines.map(FramedEvent.text))
        #expect(framer.pendingByteCount == 0)
    }

    @Test func lineExactlyAtTheCapIsAccepted() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed([Array("12345678".utf8)]) == [], "no early overflow at exactly the cap")
        #expect(framer.feed([Array("\n".utf8)]) == [.text("12345678")])
        #expect(!framer.overflowed)
        #expect(framer.feed([Array("abcdefgh\n".utf8)]) == [.text("abcdefgh")])
    }

    @Test func lineOneByteOverTheCapIsRejected() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed([Array("ok\n123456789\n".utf8)]) == [.text("ok"), .tooLong])
        #expect(framer.overflowed)
    }

    @Test func overflowIsReportedBeforeTheNewlineArrives() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed([Array("1234".utf8)]) == [])
        #expect(framer.feed([Array("56789".utf8)]) == [.tooLong])
        #expect(framer.overflowed)
    }

    @Test func nothingIsReportedAfterAnOverflow() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed([Array("123456789".utf8)]) == [.tooLong])
        #expect(framer.feed([Array("\nok\n".utf8)]) == [], "the connection is to be closed, not resynchronised")
        #expect(framer.drainAll() == [])
        #expect(framer.overflowed)
    }

    /// The cap is on the line's content; `\r\n` is the terminator, so it does not count, whichever way the
    /// bytes are split across reads.
    @Test func lineAtTheCapWithCRLFIsAcceptedTogether() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed([Array("12345678\r\n".utf8)]) == [.text("12345678")])
    }

    @Test
    func lineAtTheCapWithCRLFIsAcceptedAtEverySplit() {
        let bytes = Array("12345678\r\nnext\n".utf8)
        for cut in 0...bytes.count {
            var framer = LineFramer(maxLineLength: 8)
            let events = framer.feed([Array(bytes[..<cut]), Array(bytes[cut...])])
            if cut == 9 {
                // "12345678\r" then "\n": the pending \r is counted against the cap before the newline is seen.
                #expect(events == [.text("12345678"), .text("next")], "cut at \(cut)")
            } else {
                #expect(events == [.text("12345678"), .text("next")], "cut at \(cut)")
            }
        }
    }

    @Test func linesNeverContainTheNewline() {
        var framer = LineFramer(maxLineLength: 64)
        for event in framer.feed([Array("a\nb\r\n\r\n\nc\n".utf8)]) {
            if case .line(let bytes) = event { #expect(!bytes.contains(0x0A)) }
        }
    }
}
