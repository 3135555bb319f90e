/// The URL Standard's percent-encode sets, and UTF-8 percent-encoding with them.
enum PercentEncoding {
    enum EncodeSet {
        /// C0 controls, space, ", <, >, `.
        case fragment
        /// C0 controls, space, ", #, ', <, > (special schemes' query).
        case specialQuery
        /// The query set and ?, `, {, }.
        case path
        /// The path set and /, :, ;, =, @, [, \, ], ^, |.
        case userinfo
        /// Everything but RFC 3986's unreserved characters (ALPHA, DIGIT, -, ., _, ~): a query
        /// parameter's value as a client builds it, read the same by every server.
        case allButUnreserved

        func contains(_ byte: UInt8) -> Bool {
            if self == .allButUnreserved { return !PercentEncoding.isUnreserved(byte) }
            // The C0 control percent-encode set: controls, DEL and every non-ASCII byte.
            if byte < 0x20 || byte >= 0x7F { return true }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"):
                return true
            case UInt8(ascii: "`"):
                return self != .specialQuery
            case UInt8(ascii: "#"), UInt8(ascii: "'"):
                return self == .specialQuery || (byte == UInt8(ascii: "#") && self != .fragment)
            case UInt8(ascii: "?"), UInt8(ascii: "{"), UInt8(ascii: "}"):
                return self == .path || self == .userinfo
            case UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: "@"),
                UInt8(ascii: "["), UInt8(ascii: "\\"), UInt8(ascii: "]"), UInt8(ascii: "^"), UInt8(ascii: "|"):
                return self == .userinfo
            default:
                return false
            }
        }
    }

    /// RFC 3986 section 2.3.
    fileprivate static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static let hexDigits: StaticString = "0123456789ABCDEF"

    /// Sized first and written through a pointer: a byte at a time through `append`, a long
    /// non-ASCII path cost four times its parsing.
    static func append(_ bytes: UnsafeBufferPointer<UInt8>, _ set: EncodeSet, to output: inout [UInt8]) {
        var encoded = 0
        for byte in bytes where set.contains(byte) { encoded += 1 }
        guard encoded > 0 else {
            output.append(contentsOf: bytes)
            return
        }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: bytes.count + 2 * encoded))
        output.withUnsafeMutableBufferPointer { out in
            hexDigits.withUTF8Buffer { hex in
                var at = start
                for byte in bytes {
                    if set.contains(byte) {
                        out[at] = UInt8(ascii: "%")
                        out[at + 1] = hex[Int(byte >> 4)]
                        out[at + 2] = hex[Int(byte & 0xF)]
                        at += 3
                    } else {
                        out[at] = byte
                        at += 1
                    }
                }
            }
        }
    }

    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, _ set: EncodeSet) -> String {
        if !bytes.contains(where: set.contains) { return String(decoding: bytes, as: UTF8.self) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 8)
        append(bytes, set, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Percent-decoding: `%` and two hex digits become that byte; anything else stays.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte)
                index += 1
            }
        }
        return output
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Percent-encoding for what is not parsed from a URL but put into one.
public enum URLComponentEncoding {
    /// `value` with everything but RFC 3986's unreserved characters percent-encoded (uppercase
    /// hex), as a query parameter's name or value.
    public static func queryValue(_ value: String) -> String {
        var value = value
        return value.withUTF8 { PercentEncoding.encode($0, .allButUnreserved) }
    }
}
