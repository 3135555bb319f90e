/// Recognizes IPv4 and IPv6 address literals and writes them in one canonical form.
///
/// Cookies are keyed by host strings, so two spellings of one address (`::1` and `0:0::1`)
/// must become the same string before they are compared.
public enum IPLiteral {
    /// The canonical text of `text` if it is an IPv4 dotted quad or an IPv6 address
    /// (with or without brackets, no zone id), else nil.
    public static func canonical(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        if let v4 = parseIPv4(bytes[...]) {
            return formatIPv4(v4)
        }
        var inner = bytes[...]
        if inner.first == UInt8(ascii: "["), inner.last == UInt8(ascii: "]"), inner.count >= 2 {
            inner = inner.dropFirst().dropLast()
        }
        if let v6 = parseIPv6(inner) {
            return formatIPv6(v6)
        }
        return nil
    }

    /// True for an IPv4 or IPv6 literal (see `canonical`).
    public static func isIPLiteral(_ text: String) -> Bool {
        canonical(text) != nil
    }

    /// Four decimal octets, each 0-255 without leading zeros (a leading zero means octal to
    /// WHATWG URL parsers; refusing it avoids reading one address two ways).
    static func parseIPv4(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var octets: [UInt8] = []
        var value = 0
        var digits = 0
        var leadingZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, octets.count < 3 else { return nil }
                octets.append(UInt8(value))
                value = 0
                digits = 0
                leadingZero = false
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if digits == 1, leadingZero { return nil }
                if digits == 0, byte == UInt8(ascii: "0") { leadingZero = true }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard digits <= 3, value <= 255 else { return nil }
            } else {
                return nil
            }
        }
        guard digits > 0, octets.count == 3 else { return nil }
        octets.append(UInt8(value))
        return octets
    }

    static func formatIPv4(_ octets: [UInt8]) -> String {
        octets.map { String($0) }.joined(separator: ".")
    }

    /// RFC 4291 section 2.2 text forms: up to eight 16-bit hex groups, at most one `::`,
    /// optionally ending in a dotted quad.
    static func parseIPv6(_ bytes: ArraySlice<UInt8>) -> [UInt16]? {
        guard bytes.count >= 2, bytes.count <= 45 else { return nil }
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var sawGap = false
        var index = bytes.startIndex
        let end = bytes.endIndex
        if bytes[index] == UInt8(ascii: ":") {
            guard bytes[index + 1] == UInt8(ascii: ":") else { return nil }
            sawGap = true
            index += 2
            if index == end { return [UInt16](repeating: 0, count: 8) }
        }
        while index < end {
            // One group: hex digits, or a trailing IPv4 part.
            var groupEnd = index
            while groupEnd < end, bytes[groupEnd] != UInt8(ascii: ":") { groupEnd += 1 }
            let group = bytes[index..<groupEnd]
            if group.contains(UInt8(ascii: ".")) {
                guard groupEnd == end, let v4 = parseIPv4(group) else { return nil }
                let high = UInt16(v4[0]) << 8 | UInt16(v4[1])
                let low = UInt16(v4[2]) << 8 | UInt16(v4[3])
                if sawGap { tail += [high, low] } else { head += [high, low] }
                index = end
                break
            }
            guard let value = parseHexGroup(group) else { return nil }
            if sawGap { tail.append(value) } else { head.append(value) }
            index = groupEnd
            if index == end { break }
            // At a ':'; a second ':' right after it is the gap.
            index += 1
            guard index < end else { return nil }
            if bytes[index] == UInt8(ascii: ":") {
                guard !sawGap else { return nil }
                sawGap = true
                index += 1
            }
        }
        let total = head.count + tail.count
        if sawGap {
            guard total <= 7 else { return nil }
            return head + [UInt16](repeating: 0, count: 8 - total) + tail
        }
        return total == 8 ? head : nil
    }

    static func parseHexGroup(_ group: ArraySlice<UInt8>) -> UInt16? {
        guard !group.isEmpty, group.count <= 4 else { return nil }
        var value: UInt16 = 0
        for byte in group {
            guard let digit = hexValue(byte) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// RFC 5952 section 4: lowercase hex, no leading zeros, the longest run (two or more) of zero
    /// groups shortened to `::`, the first such run on a tie.
    static func formatIPv6(_ groups: [UInt16]) -> String {
        // RFC 5952 section 5: IPv4-mapped addresses keep the dotted quad.
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            let octets = [groups[6] >> 8, groups[6] & 0xFF, groups[7] >> 8, groups[7] & 0xFF].map { UInt8($0) }
            return "::ffff:" + formatIPv4(octets)
        }
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for position in 0...groups.count {
            if position < groups.count, groups[position] == 0 {
                if runStart < 0 { runStart = position }
            } else if runStart >= 0 {
                let length = position - runStart
                if length > bestLength, length >= 2 {
                    bestStart = runStart
                    bestLength = length
                }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<groups.count) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<groups.count)
    }
}
