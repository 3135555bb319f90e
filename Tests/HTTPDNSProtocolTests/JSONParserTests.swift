import HTTPDNSProtocol
import Testing

/// JSONParser against RFC 8259 (grammar in sections 2-7) and RFC 3629 (UTF-8).
struct JSONParserValueTests {
    @Test func literals() {
        #expect(parsed("true") == .bool(true))
        #expect(parsed("false") == .bool(false))
        #expect(parsed("null") == .null)
    }

    /// RFC 8259 section 2: a JSON text is any serialized value, not only an object or array.
    @Test func scalarsAreValidTopLevelTexts() {
        #expect(parsed("0") == number("0"))
        #expect(parsed(#""x""#) == .string("x"))
        #expect(parsed(" null ") == .null)
    }

    @Test func arraysAndObjects() throws {
        #expect(parsed("[]") == .array([]))
        #expect(parsed("{}") == .object(JSONObject()))
        #expect(parsed(#"[1,"a",true,null,[],{}]"#) == .array([1, "a", true, nil, [], [:]]))
        let object = try #require(parsed(#"{"b":1,"a":[2,{"c":null}]}"#)?.objectValue)
        #expect(object.keys == ["b", "a"], "member order is kept")
        #expect(object["a"] == [2, ["c": nil]])
        #expect(object["missing"] == nil)
    }

    /// RFC 8259 section 4 leaves duplicate names unspecified; the contract takes the last one on lookup.
    @Test func duplicateNamesKeepAllMembersAndLookupTakesTheLast() throws {
        let object = try #require(parsed(#"{"a":1,"b":2,"a":3}"#)?.objectValue)
        #expect(object["a"] == .int(3))
        #expect(object.count == 3)
        #expect(parsed(#"{"a":1,"a":3}"#)?["a"] == .int(3))
    }

    /// RFC 8259 section 8.3: names are compared code unit by code unit. U+212A KELVIN SIGN is canonically
    /// equivalent to "K" (U+004B), so a String `==` lookup would confuse two distinct member names.
    @Test
    func memberLookupComparesCodeUnits() throws {
        let object = try #require(parsed(#"{"\u212A":1}"#)?.objectValue)
        #expect(object["K"] == nil)
        #expect(object["\u{212A}"] == .int(1))
    }

    /// RFC 8259 section 2: insignificant whitespace is space, tab, line feed and carriage return, anywhere
    /// around structural characters and values.
    @Test func whitespaceAroundEveryToken() {
        let text = " \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n[ \t\r\n1 \t\r\n, \t\r\nnull \t\r\n] \t\r\n} \t\r\n"
        #expect(parsed(text) == ["a": [1, nil]])
    }

    @Test(arguments: [
        "\u{0C}1", "1\u{0B}", "\u{A0}1", "[1,\u{2028}2]", "\u{3000}null", "[1\u{0C}]", "\u{85}[]",
    ])
    func otherWhitespaceIsRejected(_ text: String) {
        #expect(parsed(text) == nil)
    }

    @Test(arguments: [
        "", " ", "\n", "[", "]", "{", "}", "[1", "[1,", "[1,]", "[,1]", "[1 2]", "[1,,2]", "{\"a\"}", "{\"a\":}",
        "{\"a\" 1}", "{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}", "{a:1}", "{1:1}", "{null:1}", "{'a':1}", "'a'",
        "[1]]", "{}}", "tru", "nul", "fals", "True", "NULL", "nulll", "truefalse", "[1]x", "1 2", "\"a\" \"b\"",
        "/* c */1", "1 // c", "[1] [2]", "{\"a\":1}{", "\u{0}", "[\u{0}]", "undefined",
    ])
    func malformedTextsAreRejected(_ text: String) {
        #expect(parsed(text) == nil)
    }
}

/// RFC 8259 section 6: number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT ).
struct JSONParserNumberTests {
    @Test(arguments: [
        "0", "-0", "1", "-1", "10", "1234567890", "0.5", "-0.5", "1.25", "10.0001", "1e5", "1E5", "1e+5", "1e-5",
        "1E+05", "1.5e10", "0e0", "-0.0e-0", "0.000", "123456789012345678901234567890", "1e400", "-1e-400",
        "9223372036854775808",
    ])
    func validNumbersKeepTheirLiteral(_ literal: String) throws {
        let value = try #require(parsed(literal)?.numberValue)
        #expect(value.literal == literal)
        // The same literal inside a container, where a delimiter ends it.
        #expect(parsed("[\(literal)]")?.arrayValue?.first?.numberValue?.literal == literal)
        #expect(parsed("{\"n\":\(literal)}")?["n"]?.numberValue?.literal == literal)
    }

    @Test(arguments: [
        "01", "-01", "00", "001", "1.", "-1.", "1.e5", ".5", "-.5", "+1", "+0", "-", "--1", "- 1", "1e", "1e+",
        "1E-", "1e+-1", "1.5.5", "0x10", "0X1F", "NaN", "-NaN", "Infinity", "-Infinity", "inf", "1_000",
        "\u{0661}", "１", "0.", "1e5.0", "e5", "1ee5",
    ])
    func invalidNumbersAreRejected(_ literal: String) {
        #expect(parsed(literal) == nil)
        #expect(parsed("[\(literal)]") == nil)
        #expect(parsed("{\"n\":\(literal)}") == nil)
    }

    @Test func integerViewOnlyForIntegerLiteralsThatFit() throws {
        func int(_ literal: String) throws -> Int64? { try #require(parsed(literal)?.numberValue).int64Value }
        #expect(try int("0") == 0)
        #expect(try int("-0") == 0)
        #expect(try int("42") == 42)
        #expect(try int("9223372036854775807") == Int64.max)
        #expect(try int("-9223372036854775808") == Int64.min)
        #expect(try int("9223372036854775808") == nil)
        #expect(try int("1.0") == nil)
        #expect(try int("1e2") == nil)
    }

    @Test func doubleView() throws {
        #expect(try #require(parsed("1.5e3")?.numberValue).doubleValue == 1500)
        #expect(try #require(parsed("-0.25")?.numberValue).doubleValue == -0.25)
    }

    /// Numbers that differ in text are different values: `1`, `1.0` and `1e0` stay distinct (request ids).
    @Test func numbersCompareByLiteral() {
        #expect(parsed("1") != parsed("1.0"))
        #expect(parsed("1") != parsed("1e0"))
        #expect(parsed("1") == .int(1))
    }
}

/// RFC 8259 section 7 (strings) and RFC 3629 (UTF-8).
struct JSONParserStringTests {
    @Test func everyEscape() {
        let text = #""\"\\\/\b\f\n\r\t""#
        #expect(scalars(parsed(text)?.stringValue) == [0x22, 0x5C, 0x2F, 0x08, 0x0C, 0x0A, 0x0D, 0x09])
    }

    @Test func unicodeEscapes() {
        #expect(scalars(parsed(#""\u0000""#)?.stringValue) == [0])
        #expect(scalars(parsed(#""\u001F\u0020""#)?.stringValue) == [0x1F, 0x20])
        #expect(scalars(parsed(#""\u00e9\u00E9""#)?.stringValue) == [0xE9, 0xE9], "hex digits in either case")
        #expect(scalars(parsed(#""\u20AC""#)?.stringValue) == [0x20AC])
        #expect(scalars(parsed(#""\uFFFF""#)?.stringValue) == [0xFFFF])
        #expect(scalars(parsed(#""a\u0041b""#)?.stringValue) == [0x61, 0x41, 0x62])
    }

    @Test func surrogatePairsBecomeOneScalar() {
        #expect(scalars(parsed(#""\uD83D\uDE00""#)?.stringValue) == [0x1F600])
        #expect(scalars(parsed(#""\ud83d\ude00""#)?.stringValue) == [0x1F600])
        #expect(scalars(parsed(#""\uD800\uDC00""#)?.stringValue) == [0x10000])
        #expect(scalars(parsed(#""\uDBFF\uDFFF""#)?.stringValue) == [0x10FFFF])
        #expect(scalars(parsed(#""x\uD834\uDD1Ey""#)?.stringValue) == [0x78, 0x1D11E, 0x79])
    }

    /// A lone surrogate has no Unicode scalar value, so it cannot become a string.
    @Test(arguments: [
        #""\uD800""#, #""\uDBFF""#, #""\uDC00""#, #""\uDFFF""#, #""\uD800x""#, #""\uD800\u0041""#,
        #""\uD800\uD800""#, #""\uDC00\uD800""#, #""\uD800\n""#, #""\uD800\""#, #""\uD800\u""#, #""\uD800\uDC""#,
        #""\uD800 \uDC00""#,
    ])
    func loneSurrogatesAreRejected(_ text: String) {
        #expect(parsed(text) == nil)
    }

    @Test(arguments: [
        #""\a""#, #""\x41""#, #""\U0041""#, #""\'""#, #""\0""#, #""\ ""#, #""\u12""#, #""\u12G4""#, #""\u-123""#,
        #""\u 123""#, "\"\\", "\"\\u", "\"\\u00", #""\u{41}""#, #""\e""#, #""\v""#,
    ])
    func invalidEscapesAreRejected(_ text: String) {
        #expect(parsed(text) == nil)
    }

    @Test func everyRawControlCharacterIsRejected() {
        for byte in UInt8(0)..<0x20 {
            #expect(parseError([0x22, 0x61, byte, 0x62, 0x22]) != nil, "byte \(byte)")
            #expect(parseError([0x22, byte, 0x22]) != nil, "byte \(byte)")
        }
        // DEL is not a control character in JSON's sense.
        #expect(scalars(parsed([0x22, 0x7F, 0x22])?.stringValue) == [0x7F])
    }

    @Test func unterminatedStringsAreRejected() {
        #expect(parsed("\"abc") == nil)
        #expect(parsed("\"") == nil)
        #expect(parsed("[\"a]") == nil)
        #expect(parsed("\"\u{E9}") == nil)
    }

    /// Valid UTF-8 of every length passes through byte for byte (boundaries of RFC 3629's table).
    @Test(
        arguments: [
            [0xC2, 0x80], [0xDF, 0xBF], [0xC3, 0xA9], [0xE0, 0xA0, 0x80], [0xE2, 0x82, 0xAC], [0xED, 0x9F, 0xBF],
            [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF0, 0x9F, 0x98, 0x80],
            [0xF4, 0x8F, 0xBF, 0xBF], [0xE2, 0x80, 0xA8],
        ] as [[UInt8]])
    func validMultiByteUTF8IsKept(_ sequence: [UInt8]) throws {
        let string = try #require(parsed([0x22] + sequence + [0x22])?.stringValue)
        #expect(Array(string.utf8) == sequence)
        // Also after an escape (the parser's slow path) and as a member name.
        let escaped = try #require(parsed([0x22, 0x5C, 0x6E] + sequence + [0x22])?.stringValue)
        #expect(Array(escaped.utf8) == [0x0A] + sequence)
        let object = try #require(parsed([0x7B, 0x22] + sequence + [0x22, 0x3A, 0x31, 0x7D])?.objectValue)
        #expect(object.keys.map { Array($0.utf8) } == [sequence])
    }

    @Test(
        arguments: [
            // Overlong forms.
            [0xC0, 0x80], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80],
            [0xF0, 0x8F, 0xBF, 0xBF],
            // UTF-16 surrogates encoded in UTF-8 (CESU-8 style).
            [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80],
            // Above U+10FFFF, and lead bytes that no longer exist.
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF],
            [0xF8, 0x88, 0x80, 0x80, 0x80],
            [0xFC, 0x84, 0x80, 0x80, 0x80, 0x80], [0xFE], [0xFF],
            // Truncated sequences.
            [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xE2, 0x41, 0x41], [0xF0, 0x9F, 0x41, 0x41],
            // Continuation bytes without a lead.
            [0x80], [0xBF], [0x41, 0x80],
            // A lead byte followed by a second lead byte.
            [0xC3, 0xC3, 0xA9],
        ] as [[UInt8]])
    func invalidUTF8IsRejected(_ sequence: [UInt8]) {
        #expect(parseError([0x22] + sequence + [0x22]) != nil)
        #expect(parseError([0x22, 0x5C, 0x6E] + sequence + [0x22]) != nil, "after an escape")
        #expect(parseError([0x22] + sequence) != nil, "at the end of the input")
        #expect(parseError([0x7B, 0x22] + sequence + [0x22, 0x3A, 0x31, 0x7D]) != nil, "as a member name")
    }

    @Test func invalidUTF8OutsideStringsIsRejected() {
        #expect(parseError([0xC3, 0xA9]) != nil)
        #expect(parseError([0x5B, 0x31, 0x2C, 0xFF, 0x5D]) != nil)
        #expect(parseError([0x31, 0x80]) != nil)
    }
}

/// Nesting limits (RFC 8259 section 9 lets a parser limit depth): rejected with an error, never a crash.
struct JSONParserDepthTests {
    static func nestedArrays(_ depth: Int, closed: Bool = true) -> [UInt8] {
        let closers = closed ? Array(repeating: UInt8(ascii: "]"), count: depth) : []
        return Array(repeating: UInt8(ascii: "["), count: depth) + closers
    }

    static func nestedObjects(_ depth: Int) -> [UInt8] {
        Array(String(repeating: #"{"a":"#, count: depth).utf8) + [UInt8(ascii: "1")]
            + Array(repeating: UInt8(ascii: "}"), count: depth)
    }

    @Test func depthUpToTheLimitIsAccepted() {
        let limit = JSONParser.defaultMaxDepth
        #expect(parseError(Self.nestedArrays(limit)) == nil)
        #expect(parseError(Self.nestedObjects(limit)) == nil)
        #expect(parseError(Self.nestedArrays(3), maxDepth: 3) == nil)
    }

    @Test func oneLevelOverTheLimitIsRejectedAtTheOpeningBracket() throws {
        let limit = JSONParser.defaultMaxDepth
        let arrays = try #require(parseError(Self.nestedArrays(limit + 1)))
        #expect(arrays.offset == limit, "the first '[' past the limit")
        let objects = try #require(parseError(Self.nestedObjects(limit + 1)))
        #expect(objects.offset == limit * 5, "the first '{' past the limit")
        #expect(parseError(Self.nestedArrays(4), maxDepth: 3)?.offset == 3)
    }

    @Test func mixedNestingCountsEveryLevel() {
        // [{"a":[{"a":[]}]}] is five levels.
        let text = #"[{"a":[{"a":[]}]}]"#
        #expect(parseError(Array(text.utf8), maxDepth: 5) == nil)
        #expect(parseError(Array(text.utf8), maxDepth: 4) != nil)
    }

    @Test func hugeNestingIsRejectedWithoutExhaustingTheStack() {
        #expect(parseError(Self.nestedArrays(100_000, closed: false)) != nil)
        #expect(parseError(Self.nestedArrays(100_000)) != nil)
        #expect(parseError(Array(String(repeating: #"{"a":"#, count: 100_000).utf8)) != nil)
        #expect(parseError(Array(String(repeating: #"[{"a":"#, count: 50_000).utf8)) != nil)
    }

    /// Wide (not deep) input is fine at any size.
    @Test func wideInputIsAccepted() throws {
        let text = "[" + Array(repeating: "[]", count: 50_000).joined(separator: ",") + "]"
        #expect(try #require(parsed(text)?.arrayValue).count == 50_000)
    }
}

/// Error offsets are byte offsets of the problem, so a client can find it in the line it sent.
struct JSONParserErrorOffsetTests {
    @Test(
        arguments: [
            ("", 0), ("[1,2", 4), ("[1 2]", 3), ("{\"a\" 1}", 5), ("{\"a\":1,}", 7), ("[1]x", 3), ("[1]  x", 5),
            ("  @", 2), ("+1", 0), (".5", 0), ("[1,]", 3), ("{1:2}", 1), ("1.", 2), ("-", 1), ("1e+", 3),
            ("[01]", 2), ("01", 1), ("\"abc", 4), ("[\"a\",\"\u{1}\"]", 6), ("{\"a\":}", 5),
        ] as [(String, Int)])
    func offsetPointsAtTheProblem(_ text: String, _ offset: Int) throws {
        let error = try #require(parseError(text))
        #expect(error.offset == offset, "\(text): \(error)")
        #expect(error.description.contains("\(error.offset)"))
        #expect(!error.reason.isEmpty)
    }

    @Test func invalidUTF8OffsetIsTheSequence() throws {
        // ["ok","a<C0 80>"]
        let bytes: [UInt8] = Array(#"["ok","a"#.utf8) + [0xC0, 0x80, 0x22, 0x5D]
        let error = try #require(parseError(bytes))
        #expect((8...9).contains(error.offset), "\(error)")
    }

    @Test func badHexDigitOffsetIsInsideTheEscape() throws {
        // "ab\u12G4" — the escape spans bytes 3..8.
        let error = try #require(parseError(#""ab\u12G4""#))
        #expect((3...8).contains(error.offset), "\(error)")
    }

    /// An invalid escape or a lone surrogate must be reported within the escape sequence, not after it.
    @Test
    func escapeErrorOffsetIsInsideTheEscape() throws {
        // "ab\x" — the escape is bytes 3...4; "ab\uDC00" — bytes 3...8.
        let badEscape = try #require(parseError(#""ab\x""#))
        let loneLow = try #require(parseError(#""ab\uDC00""#))
        let badPair = try #require(parseError(#""\uD800\u0041""#))
        #expect((3...4).contains(badEscape.offset), "\(badEscape)")
        #expect((3...8).contains(loneLow.offset), "\(loneLow)")
        #expect((1...12).contains(badPair.offset), "\(badPair)")
    }
}

/// Strings are scanned eight bytes at a time up to the first byte that is not plain ASCII; each
/// kind of such byte must stop the run at every place in a word, whatever the string's alignment.
struct JSONStringRunTests {
    /// (bytes after the plain run, the string they make, or nil when the text is invalid)
    static let stops: [(bytes: [UInt8], value: String?)] = [
        (Array(#"""#.utf8), ""),
        (Array(#"\n""#.utf8), "\n"),
        (Array(#"\"""#.utf8), "\""),
        (Array(#"\\""#.utf8), "\\"),
        ([0xC3, 0xA9, 0x22], "é"),
        ([0x7F, 0x22], "\u{7F}"),
        ([0x1F, 0x22], nil),
        ([0x00, 0x22], nil),
        ([0xFF, 0x22], nil),
        ([0x80, 0x22], nil),
    ]

    @Test func everyStopAtEveryOffsetAndAlignment() {
        for alignment in 0..<8 {
            for plainLength in 0...24 {
                let plain = (0..<plainLength).map { UInt8(ascii: "a") + UInt8($0 % 26) }
                for stop in Self.stops {
                    // Leading spaces move the string across word boundaries; trailing plain bytes
                    // make sure a later byte is not taken for the stop.
                    let line =
                        [UInt8](repeating: 0x20, count: alignment) + [0x22] + plain + stop.bytes.dropLast()
                        + Array("tail".utf8) + [0x22]
                    let expected = stop.value.map { String(decoding: plain, as: UTF8.self) + $0 + "tail" }
                    let wholeLine = [0x22] + plain + stop.bytes
                    if stop.bytes == [0x22] {
                        // The string ends at the stop: what follows is not part of it.
                        #expect(parsed(wholeLine) == .string(String(decoding: plain, as: UTF8.self)))
                        continue
                    }
                    #expect(
                        parsed(line) == expected.map(JSON.string),
                        "alignment \(alignment), \(plainLength) plain, stop \(stop.bytes)")
                    let request =
                        [UInt8](repeating: 0x20, count: alignment)
                        + Array(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"#.utf8)
                        + line.drop(while: { $0 == 0x20 }) + Array("}}".utf8)
                    let verdict = request.withUnsafeBufferPointer(compareScannerWithDecoder)
                    if case .disagreed(let how) = verdict { Issue.record("\(how): \(request)") }
                    if expected != nil, case .declined = verdict, !stop.bytes.contains(0x5C) {
                        Issue.record("the fast lane declined a plain request: \(request)")
                    }
                }
            }
        }
    }
}
