import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Seeded, deterministic fuzzing of the parser, the decoder and the framer: no trap, and the
/// invariants the daemon relies on hold for every input.
struct ProtocolFuzzTests {
    static let seedLines = [
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"example.com","family":"ipv4"}}"#,
        #"{"jsonrpc":"2.0","method":"flushCache"}"#,
        #"{"jsonrpc":"2.0","id":"x","method":"handleSetCookie","params":{"url":"http://192.0.2.1/","setCookie":["a=1"]}}"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","id":null,"method":"status","params":null}]"#,
        #"{"jsonrpc":"2.0","id":-1.5e3,"method":"deleteCookies","params":{"all":true,"name":"s\u00e9\ud83d\ude00"}}"#,
        #"{"jsonrpc":"2.0","id":2,"method":"getCookieHeader","params":{"url":"https://a.example/","forScript":false}}"#,
    ]

    /// Tokens that move a mutated input across grammar branches.
    static let dictionary: [[UInt8]] =
        [
            "{", "}", "[", "]", "\"", "\\", ",", ":", " ", "\t", "\r", "\n", "\\u", "\\uD800", "\\uDC00",
            "\\ud83d\\ude00",
            "\\n", "null", "true", "false", "0", "-", ".", "e", "E+", "1e999", "-0.0", "01", "\"id\":", "\"params\":",
            "\"method\":", "\"jsonrpc\":\"2.0\"", "[]", "{}", "[[[[[[[[", "]]]]]]]]",
        ].map { Array($0.utf8) } + [
            [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC3], [0x80], [0xFF],
            [0x00], [0x1F], [0x7F], [0xE2, 0x80, 0xA8], [0xF0, 0x9F, 0x98, 0x80],
        ]

    static func randomBytes(_ rng: inout SeededGenerator) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 0...48, using: &rng) {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: bytes.append(UInt8.random(in: 0...255, using: &rng))
            case 1: bytes += dictionary.randomElement(using: &rng)!
            default: bytes.append(Array("{}[]\",:0123456789-.eE \\u\"abntrf".utf8).randomElement(using: &rng)!)
            }
        }
        return bytes
    }

    static func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let position = Int.random(in: 0...bytes.count, using: &rng)
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where position < bytes.count:
                bytes[position] = UInt8.random(in: 0...255, using: &rng)
            case 1:
                bytes.insert(contentsOf: dictionary.randomElement(using: &rng)!, at: position)
            case 2 where position < bytes.count:
                let end = min(bytes.count, position + Int.random(in: 1...8, using: &rng))
                bytes.removeSubrange(position..<end)
            case 3 where position < bytes.count:
                let end = min(bytes.count, position + Int.random(in: 1...16, using: &rng))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            default:
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
            }
        }
        return bytes
    }

    static func deepNesting(_ rng: inout SeededGenerator) -> (bytes: [UInt8], depth: Int) {
        let depth = Int.random(in: 1...3000, using: &rng)
        var bytes: [UInt8] = []
        var closers: [UInt8] = []
        for _ in 0..<depth {
            if Bool.random(using: &rng) {
                bytes.append(UInt8(ascii: "["))
                closers.append(UInt8(ascii: "]"))
            } else {
                bytes += Array(#"{"k":"#.utf8)
                closers.append(UInt8(ascii: "}"))
            }
        }
        bytes += Array("1".utf8)
        if Int.random(in: 0..<4, using: &rng) > 0 { bytes += closers.reversed() }
        return (bytes, depth)
    }

    /// The checks every input goes through.
    static func check(_ bytes: [UInt8]) {
        let parseOutcome = parseResult(bytes)
        switch parseOutcome {
        case .success(let value):
            // RFC 8259 section 8.1: an accepted text is UTF-8.
            #expect(String(validating: bytes, as: UTF8.self) != nil, "accepted invalid UTF-8: \(bytes)")
            let encoded = value.encoded
            #expect(!encoded.contains(0x0A))
            #expect(!encoded.contains { $0 < 0x20 })
            let reparsed = parseResult(encoded)
            #expect((try? reparsed.get()) == value, "re-encoded value differs: \(bytes)")
            #expect((try? reparsed.get())?.encoded == encoded)
        case .failure(let error):
            #expect((0...bytes.count).contains(error.offset), "offset \(error.offset) outside the input")
        }

        let line = decode(bytes, maxBatch: 4)
        if case .failure = parseOutcome {
            #expect(line.failure?.code == .parseError, "a parse failure is answered with -32700")
        } else {
            #expect(line.failure?.code != .parseError)
        }
        for (response, id) in responses(to: line) {
            #expect(!response.contains(0x0A), "a response is one line")
            let reread = try? JSONParser.parse(response)
            let parsedResponse = reread.flatMap(RPCResponse.init(json:))
            #expect(parsedResponse != nil, "response reads back: \(String(decoding: response, as: UTF8.self))")
            #expect(parsedResponse?.id == id)
        }
    }

    /// The response the server would write for each element (a null result for every request, notifications
    /// included, so that their encoding is exercised as well).
    static func responses(to line: RPCLine) -> [([UInt8], RPCID)] {
        func respond(_ inbound: RPCInbound) -> ([UInt8], RPCID) {
            var out = JSONOutput()
            switch inbound {
            case .request(let request):
                let id = request.id ?? .null
                let echo: JSON = ["method": .string(request.method), "params": .object(request.params)]
                RPCEncoder.writeResult(echo, id: id, to: &out)
                return (out.bytes, id)
            case .invalid(let id, let error):
                RPCEncoder.writeError(error, id: id ?? .null, to: &out)
                return (out.bytes, id ?? .null)
            }
        }
        switch line {
        case .single(let inbound): return [respond(inbound)]
        case .batch(let elements): return elements.map(respond)
        case .failure(let error):
            var out = JSONOutput()
            RPCEncoder.writeError(error, id: .null, to: &out)
            return [(out.bytes, .null)]
        }
    }

    @Test func randomBytes() {
        var rng = SeededGenerator(state: 0x4A53_4F4E_0000_0001)
        for _ in 0..<2000 { Self.check(Self.randomBytes(&rng)) }
    }

    @Test func mutatedRequests() {
        var rng = SeededGenerator(state: 0x4A53_4F4E_0000_0002)
        let seeds = Self.seedLines.map { Array($0.utf8) }
        for seed in seeds { Self.check(seed) }
        for _ in 0..<3000 { Self.check(Self.mutate(seeds.randomElement(using: &rng)!, &rng)) }
    }

    @Test func deepNesting() {
        var rng = SeededGenerator(state: 0x4A53_4F4E_0000_0003)
        for _ in 0..<300 {
            let (bytes, depth) = Self.deepNesting(&rng)
            if depth > JSONParser.defaultMaxDepth {
                #expect(parseError(bytes) != nil, "depth \(depth) accepted")
            }
            Self.check(bytes)
        }
    }

    /// The framer against a plain model (split on LF, drop one trailing CR, skip blank lines), with random reads.
    @Test func framerMatchesModelWithRandomReads() {
        var rng = SeededGenerator(state: 0x4A53_4F4E_0000_0004)
        for _ in 0..<300 {
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 0...12, using: &rng) {
                let valid = Array(Self.seedLines.randomElement(using: &rng)!.utf8)
                stream += Bool.random(using: &rng) ? Self.randomBytes(&rng) : valid
                stream += Bool.random(using: &rng) ? [0x0A] : [0x0D, 0x0A]
            }
            let expected = Self.modelLines(stream)
            var framer = LineFramer(maxLineLength: 1 << 20)
            var events: [FramedEvent] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + Int.random(in: 1...40, using: &rng))
                framer.append(Array(stream[offset..<end]))
                events += framer.drainAll()
                offset = end
            }
            #expect(events == expected.map(FramedEvent.line))
            for case .line(let line) in events {
                #expect(!line.contains(0x0A))
                Self.check(line)
            }
        }
    }

    /// With a small cap: lines stay under it, nothing follows `.tooLong`, and lines before it are the model's.
    @Test func framerWithSmallCapNeverExceedsIt() {
        var rng = SeededGenerator(state: 0x4A53_4F4E_0000_0005)
        for _ in 0..<500 {
            let cap = Int.random(in: 1...24, using: &rng)
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...10, using: &rng) {
                stream += Self.randomBytes(&rng).prefix(Int.random(in: 0...(cap + 4), using: &rng))
                stream.append(0x0A)
            }
            var framer = LineFramer(maxLineLength: cap)
            var events: [FramedEvent] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + Int.random(in: 1...16, using: &rng))
                framer.append(Array(stream[offset..<end]))
                events += framer.drainAll()
                offset = end
            }
            if let overflow = events.firstIndex(of: .tooLong) {
                #expect(overflow == events.count - 1, "nothing after tooLong")
                #expect(framer.overflowed)
            }
            let lines = events.compactMap { event -> [UInt8]? in
                if case .line(let bytes) = event { return bytes }
                return nil
            }
            #expect(lines.allSatisfy { $0.count <= cap && !$0.contains(0x0A) })
            #expect(Array(Self.modelLines(stream).prefix(lines.count)) == lines)
        }
    }

    static func modelLines(_ stream: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in stream {
            guard byte == 0x0A else {
                current.append(byte)
                continue
            }
            if current.last == 0x0D { current.removeLast() }
            if !current.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { lines.append(current) }
            current = []
        }
        return lines
    }
}
