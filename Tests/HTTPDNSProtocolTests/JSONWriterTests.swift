import HTTPDNSProtocol
import Testing

/// The writer's promises: valid compact RFC 8259 text, no raw control character (so never a raw
/// newline, which would break the line framing), `/` and non-ASCII written as themselves.
struct JSONWriterTests {
    @Test func generatedValuesRoundTrip() throws {
        var generator = JSONGenerator(seed: 0x5752_4954_4552_0001)
        for _ in 0..<2000 {
            let value = generator.value()
            let encoded = value.encoded
            let reparsed = try JSONParser.parse(encoded)
            #expect(reparsed == value, "\(value.encodedString)")
            // String == is canonical equivalence; the bytes show that no character was normalised.
            #expect(reparsed.encoded == encoded)
            #expect(!encoded.contains(0x0A))
            #expect(!encoded.contains { $0 < 0x20 }, "\(value.encodedString)")
        }
    }

    @Test func compactOutputKeepsMemberOrderAndDuplicates() {
        let object = JSONObject([("b", 1), ("a", [true, false, nil]), ("b", "x")])
        #expect(JSON.object(object).encodedString == #"{"b":1,"a":[true,false,null],"b":"x"}"#)
        #expect(JSON.array([]).encodedString == "[]")
        #expect(JSON.object(JSONObject()).encodedString == "{}")
        #expect(JSON.string("").encodedString == #""""#)
    }

    @Test func everyControlCharacterIsEscaped() throws {
        for value in UInt32(0)..<0x20 {
            let string = String(Character(Unicode.Scalar(value)!))
            let encoded = JSON.string("a" + string + "b").encoded
            #expect(!encoded.contains { $0 < 0x20 }, "U+\(value)")
            #expect(try JSONParser.parse(encoded) == .string("a" + string + "b"))
        }
    }

    /// Escapes are found eight bytes at a time: each kind, at every place in a word, after plain
    /// ASCII and after bytes above 0x7F (which are never escaped), comes out escaped exactly once.
    @Test func everyEscapeAtEveryOffset() throws {
        let escapes: [(byte: UInt8, written: String)] = [
            (0x22, #"\""#), (0x5C, #"\\"#), (0x0A, #"\n"#), (0x00, #"\u0000"#), (0x1F, #"\u001f"#),
        ]
        for prefixLength in 0...20 {
            for filler in ["a", "é"] {
                let prefix = String(repeating: filler, count: prefixLength)
                for escape in escapes {
                    let middle = String(decoding: [escape.byte], as: UTF8.self)
                    let value = prefix + middle + "tail~\u{7F}"
                    let encoded = JSON.string(value).encodedString
                    #expect(
                        encoded == "\"" + prefix + escape.written + "tail~\u{7F}\"",
                        "\(prefixLength) \(filler) \(escape.byte)")
                    #expect(try JSONParser.parse(encoded) == .string(value))
                }
                #expect(JSON.string(prefix).encodedString == "\"" + prefix + "\"")
            }
        }
    }

    @Test func quoteAndBackslashAreEscaped() throws {
        let encoded = JSON.string(#"a"b\c"#).encodedString
        #expect(encoded == #""a\"b\\c""#)
    }

    @Test func noRawNewlineEvenInMemberNamesAndNestedValues() {
        let value: JSON = ["line\nbreak": ["\r\n", ["k\n": "\u{2028}\n"]]]
        #expect(!value.encoded.contains(0x0A))
        #expect(!value.encoded.contains(0x0D))
    }

    @Test func slashIsNotEscaped() {
        #expect(JSON.string("a/b</script>").encodedString == #""a/b</script>""#)
    }

    @Test func nonASCIIIsWrittenAsUTF8() {
        let text = "é€😀\u{10FFFF}\u{2028}"
        #expect(JSON.string(text).encoded == [0x22] + Array(text.utf8) + [0x22])
    }

    @Test func delIsValidUnescaped() throws {
        let encoded = JSON.string("\u{7F}").encoded
        #expect(try JSONParser.parse(encoded) == .string("\u{7F}"))
    }

    @Test(arguments: ["1.0", "1e0", "1E+05", "-0", "0.000", "123456789012345678901234567890", "1e400", "-1.5E-10"])
    func numberLiteralsAreWrittenAsParsed(_ literal: String) throws {
        #expect(try JSONParser.parse(literal).encodedString == literal)
        #expect(try JSONParser.parse("[\(literal)]").encodedString == "[\(literal)]")
    }

    @Test func integerInitialisers() {
        #expect(JSON.int(42).encodedString == "42")
        #expect(JSON.int(-7).encodedString == "-7")
        #expect(JSON.int64(.min).encodedString == "-9223372036854775808")
        #expect(JSON.int64(.max).encodedString == "9223372036854775807")
    }

    /// A double always becomes a valid JSON number with the same value; NaN and infinities (which JSON
    /// cannot express) must still produce valid JSON.
    @Test(arguments: [
        0.0, -0.0, 1.0, -1.5, 0.1, 1e15, 1e16, 123456789.125, 1e300, -1e-300, .leastNonzeroMagnitude,
        .greatestFiniteMagnitude,
        Double.ulpOfOne, 1e-7,
    ])
    func doublesBecomeValidNumbers(_ value: Double) throws {
        let json = JSON.double(value)
        let literal = try #require(json.numberValue?.literal)
        let reparsed = try JSONParser.parse(json.encoded)
        #expect(reparsed.numberValue?.literal == literal, "literal \(literal) is valid JSON")
        #expect(Double(literal) == value, "literal \(literal)")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteDoublesStillWriteValidJSON(_ value: Double) throws {
        let reparsed = try JSONParser.parse(JSON.double(value).encoded)
        #expect(reparsed.numberValue != nil)
    }

    @Test func writeAppendsToExistingBytes() {
        var out = JSONOutput()
        out.append(contentsOf: Array("x".utf8))
        JSON.bool(true).write(to: &out)
        #expect(out.bytes == Array("xtrue".utf8))
    }
}
