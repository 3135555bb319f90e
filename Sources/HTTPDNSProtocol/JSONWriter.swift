/// Compact JSON output: no whitespace, `/` not escaped, non-ASCII written as UTF-8, and control
/// characters escaped, so a value never contains a raw newline (the framing relies on that).
///
/// The pieces append straight to a byte buffer: the method results write themselves with them
/// into the connection's output, with no `JSON` tree in between.
public enum JSONWriter {
    /// Appends text that is already JSON (a literal such as `{"header":`), byte for byte.
    @inlinable
    public static func raw(_ text: StaticString, to out: inout JSONOutput) {
        out.append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a quoted, escaped string.
    public static func string(_ s: String, to out: inout JSONOutput) {
        s.withUTF8Bytes { string($0, to: &out) }
    }

    /// Appends UTF-8 bytes as a quoted, escaped string.
    public static func string(_ buffer: UnsafeBufferPointer<UInt8>, to out: inout JSONOutput) {
        // Nearly every string needs no escape: then it is one copy between quotes.
        guard let firstEscape = firstEscape(in: buffer) else {
            out.appendQuoted(buffer)
            return
        }
        out.append(UInt8(ascii: "\""))
        escaped(buffer, from: firstEscape, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends a string's content, escaped, without the quotes: a long string written in pieces
    /// (the quotes written before the first and after the last).
    public static func stringContent(_ s: String, to out: inout JSONOutput) {
        s.withUTF8Bytes { buffer in
            guard let firstEscape = firstEscape(in: buffer) else { return out.append(buffer) }
            escaped(buffer, from: firstEscape, to: &out)
        }
    }

    /// Appends `buffer` with each byte that needs it escaped; `firstEscape` is the first such.
    private static func escaped(_ buffer: UnsafeBufferPointer<UInt8>, from firstEscape: Int, to out: inout JSONOutput) {
        var runStart = 0
        for i in firstEscape..<buffer.count where needsEscape(buffer[i]) {
            let byte = buffer[i]
            out.append(UnsafeBufferPointer(rebasing: buffer[runStart..<i]))
            runStart = i + 1
            switch byte {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0xF))
            }
        }
        out.append(UnsafeBufferPointer(rebasing: buffer[runStart..<buffer.count]))
    }

    /// A string, or `null` for nil.
    public static func string(_ s: String?, to out: inout JSONOutput) {
        if let s { string(s, to: &out) } else { raw("null", to: &out) }
    }

    /// `["a","b"]`.
    public static func stringArray(_ strings: [String], to out: inout JSONOutput) {
        out.append(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            string(s, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// An integer in decimal, without going through a String.
    public static func integer(_ value: Int64, to out: inout JSONOutput) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            // The magnitude of Int64.min does not fit an Int64; it does fit a UInt64.
            digits(UInt64(bitPattern: 0 &- value), to: &out)
        } else {
            digits(UInt64(value), to: &out)
        }
    }

    public static func integer(_ value: Int, to out: inout JSONOutput) { integer(Int64(value), to: &out) }

    /// An integer, or `null` for nil.
    public static func integer(_ value: Int64?, to out: inout JSONOutput) {
        if let value { integer(value, to: &out) } else { raw("null", to: &out) }
    }

    public static func bool(_ value: Bool, to out: inout JSONOutput) {
        if value { raw("true", to: &out) } else { raw("false", to: &out) }
    }

    public static func number(_ value: JSONNumber, to out: inout JSONOutput) {
        verbatim(value.literal, to: &out)
    }

    /// Appends a string's UTF-8 as it is: text that is already JSON, such as a number's literal.
    static func verbatim(_ s: String, to out: inout JSONOutput) {
        s.withUTF8Bytes { out.append($0) }
    }

    private static func digits(_ value: UInt64, to out: inout JSONOutput) {
        guard value >= 10 else {
            out.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        // 20 digits hold UInt64.max.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { scratch in
            var position = 20
            var rest = value
            while rest > 0 {
                position -= 1
                scratch[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            out.append(UnsafeBufferPointer(rebasing: scratch[position..<20]))
        }
    }

    /// Control characters, `"` and `\\`.
    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    /// The offset of the first byte that needs an escape, eight bytes a step.
    static func firstEscape(in buffer: UnsafeBufferPointer<UInt8>) -> Int? {
        ByteWords.firstIndex(
            in: buffer,
            flags: { ByteWords.below($0, 0x20) | ByteWords.equal($0, 0x22) | ByteWords.equal($0, 0x5C) },
            isMatch: needsEscape)
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}

extension JSON {
    /// Appends the compact encoding of `self` to `out`.
    public func write(to out: inout JSONOutput) {
        switch self {
        case .null: JSONWriter.raw("null", to: &out)
        case .bool(let b): JSONWriter.bool(b, to: &out)
        case .number(let n): JSONWriter.number(n, to: &out)
        case .string(let s): JSONWriter.string(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.string(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The compact encoding as bytes.
    public var encoded: [UInt8] {
        var out = JSONOutput()
        write(to: &out)
        return out.bytes
    }

    /// The compact encoding as a string.
    public var encodedString: String { String(decoding: encoded, as: UTF8.self) }
}
