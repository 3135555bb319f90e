/// Why a byte sequence is not one JSON text.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem.
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// It rejects invalid UTF-8, lone surrogates, trailing garbage and nesting deeper than
/// `maxDepth` (a client must not be able to exhaust the daemon's stack).
public struct JSONParser {
    /// Deeper nesting than any request of the contract needs, far below what the stack can hold.
    public static let defaultMaxDepth = 64

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(JSONParseError) { return .success(try parse(buffer: buffer, maxDepth: maxDepth)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSON {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    public static func parse(buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth) throws(JSONParseError)
        -> JSON
    {
        var parser = JSONCursor(bytes: buffer, maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index != buffer.count { throw parser.error("unexpected data after the JSON value") }
        return value
    }
}

/// The parser's position in a buffer, with the grammar's pieces. `RequestScanner` reads requests
/// with the same pieces (the `skip` functions accept exactly what the `parse` ones accept), so
/// both paths agree on what is JSON.
struct JSONCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    @inline(__always) var atEnd: Bool { index >= bytes.count }
    @inline(__always) var current: UInt8 { bytes[index] }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard !atEnd else { throw error("unexpected end of input") }
        switch current {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw error("invalid literal") }
        let start = literal.utf8Start
        for i in 0..<count where bytes[index + i] != start[i] { throw error("invalid literal") }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSON {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if !atEnd && current == UInt8(ascii: "}") {
            index += 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard !atEnd, current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard !atEnd, current == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            object.append(key, value)
            skipWhitespace()
            guard !atEnd else { throw error("unterminated object") }
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if current == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            throw error("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSON {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        index += 1
        var elements: [JSON] = []
        skipWhitespace()
        if !atEnd && current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard !atEnd else { throw error("unterminated array") }
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if current == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            throw error("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let range = try scanNumber()
        let literal = String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        return JSONNumber(validatedLiteral: literal)
    }

    /// Moves past one number (RFC 8259 section 6) and returns where its literal is.
    mutating func scanNumber() throws(JSONParseError) -> Range<Int> {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard !atEnd, isDigit(current) else { throw error("invalid number") }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            while !atEnd && isDigit(current) { index += 1 }
        }
        if !atEnd && current == UInt8(ascii: ".") {
            index += 1
            guard !atEnd, isDigit(current) else { throw error("invalid number") }
            while !atEnd && isDigit(current) { index += 1 }
        }
        if !atEnd && (current == UInt8(ascii: "e") || current == UInt8(ascii: "E")) {
            index += 1
            if !atEnd && (current == UInt8(ascii: "+") || current == UInt8(ascii: "-")) { index += 1 }
            guard !atEnd, isDigit(current) else { throw error("invalid number") }
            while !atEnd && isDigit(current) { index += 1 }
        }
        return start..<index
    }

    @inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: plain ASCII with no escapes becomes a String straight from the buffer.
        index = endOfPlainRun(from: index)
        if index < bytes.count && bytes[index] == UInt8(ascii: "\"") {
            let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            index += 1
            return s
        }
        var scratch = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                appendUTF8(try parseEscape(), to: &scratch)
            case 0x00..<0x20:
                throw error("control character in string")
            case 0x80...:
                let length = try validateUTF8Sequence()
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<(index + length)]))
                index += length
            default:
                scratch.append(byte)
                index += 1
            }
        }
    }

    /// Where the run of printable ASCII other than `"` and `\` (nearly every byte of a request)
    /// that starts at `from` ends, eight bytes a step.
    private func endOfPlainRun(from: Int) -> Int {
        let rest = UnsafeBufferPointer(rebasing: bytes[from...])
        let stop = ByteWords.firstIndex(
            in: rest,
            flags: { word in
                ByteWords.equal(word, UInt8(ascii: "\"")) | ByteWords.equal(word, UInt8(ascii: "\\"))
                    | ByteWords.below(word, 0x20) | ByteWords.nonASCII(word)
            },
            isMatch: { $0 < 0x20 || $0 >= 0x80 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
        return from + (stop ?? rest.count)
    }

    /// Moves past one string, validating it as `parseString` does, without decoding it.
    /// Returns whether it holds an escape (its bytes then differ from its value).
    mutating func skipString() throws(JSONParseError) -> Bool {
        index += 1  // opening quote
        var escaped = false
        while true {
            index = endOfPlainRun(from: index)
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return escaped
            case UInt8(ascii: "\\"):
                index += 1
                _ = try parseEscape()
                escaped = true
            case 0x00..<0x20:
                throw error("control character in string")
            case 0x80...:
                // A run of non-ASCII text (CJK is three bytes a character) in one loop.
                repeat { index += try validateUTF8Sequence() } while index < bytes.count && bytes[index] >= 0x80
            default:
                index += 1
            }
        }
    }

    /// Moves past one value, validating it as `parseValue` does, without building it.
    mutating func skipValue(depth: Int) throws(JSONParseError) {
        guard !atEnd else { throw error("unexpected end of input") }
        switch current {
        case UInt8(ascii: "{"): try skipContainer(depth: depth + 1, isObject: true)
        case UInt8(ascii: "["): try skipContainer(depth: depth + 1, isObject: false)
        case UInt8(ascii: "\""): _ = try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber()
        default: throw error("unexpected character")
        }
    }

    /// `parseObject` and `parseArray` without the values.
    private mutating func skipContainer(depth: Int, isObject: Bool) throws(JSONParseError) {
        guard depth <= maxDepth else { throw error("nesting too deep") }
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        index += 1
        skipWhitespace()
        if !atEnd && current == close {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            if isObject {
                guard !atEnd, current == UInt8(ascii: "\"") else { throw error("expected a member name") }
                _ = try skipString()
                skipWhitespace()
                guard !atEnd, current == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
            }
            try skipValue(depth: depth)
            skipWhitespace()
            guard !atEnd else { throw error(isObject ? "unterminated object" : "unterminated array") }
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if current == close {
                index += 1
                return
            }
            throw error(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
        }
    }

    /// One escape after its backslash (already consumed), as a Unicode scalar value.
    mutating func parseEscape() throws(JSONParseError) -> UInt32 {
        // Errors point at the backslash, not past the escape already consumed.
        let escapeStart = index - 1
        func failure(_ reason: String) -> JSONParseError { JSONParseError(offset: escapeStart, reason: reason) }
        guard index < bytes.count else { throw failure("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return 0x22
        case UInt8(ascii: "\\"): return 0x5C
        case UInt8(ascii: "/"): return 0x2F
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("lone surrogate in \\u escape") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("lone surrogate in \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw failure("lone surrogate in \\u escape")
            }
            return UInt32(scalar)
        default:
            throw failure("invalid escape")
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> Int {
        guard bytes.count - index >= 4 else { throw error("invalid \\u escape") }
        var value = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = Int(byte - 0x41 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Validates the multi-byte UTF-8 sequence at `index` (RFC 3629: no overlongs, no surrogates,
    /// at most U+10FFFF) and returns its length; `index` does not move.
    func validateUTF8Sequence() throws(JSONParseError) -> Int {
        let lead = bytes[index]
        let length: Int
        var lowerBound: UInt8 = 0x80
        var upperBound: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lowerBound = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upperBound = 0x9F
        case 0xF0: length = 4; lowerBound = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upperBound = 0x8F
        default: throw error("invalid UTF-8")
        }
        guard bytes.count - index >= length else { throw error("invalid UTF-8") }
        let second = bytes[index + 1]
        guard second >= lowerBound && second <= upperBound else { throw error("invalid UTF-8") }
        for i in 2..<max(2, length) {
            let byte = bytes[index + i]
            guard byte >= 0x80 && byte <= 0xBF else { throw error("invalid UTF-8") }
        }
        return length
    }
}

@inline(__always)
func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
    switch scalar {
    case 0..<0x80:
        out.append(UInt8(scalar))
    case 0x80..<0x800:
        out.append(UInt8(0xC0 | (scalar >> 6)))
        out.append(UInt8(0x80 | (scalar & 0x3F)))
    case 0x800..<0x10000:
        out.append(UInt8(0xE0 | (scalar >> 12)))
        out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (scalar & 0x3F)))
    default:
        out.append(UInt8(0xF0 | (scalar >> 18)))
        out.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
        out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
        out.append(UInt8(0x80 | (scalar & 0x3F)))
    }
}
