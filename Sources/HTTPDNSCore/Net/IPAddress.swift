import HTTPDNSProtocol
import HTTPDNSURL

/// An IPv4 or IPv6 address, parsed strictly and printed canonically.
///
/// Only the forms a resolver can legitimately return are accepted: dotted-quad IPv4 with no
/// leading zeros or shorthand (`1.2.3`, `0x7f.1`, `010.0.0.1` are all rejected, because other
/// parsers read them differently), and RFC 4291 IPv6 text without a zone id.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let family: IPFamily
    /// 4 bytes for `.ipv4`, 16 for `.ipv6`, in network order.
    public let bytes: [UInt8]

    /// From raw network-order bytes, e.g. the RDATA of an A (4) or AAAA (16) record.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: self.family = .ipv4
        case 16: self.family = .ipv6
        default: return nil
        }
        self.bytes = Array(bytes)
    }

    /// Parses either family; a colon means IPv6.
    public init?(_ text: String) {
        // Over contiguous bytes: host names, refused here at their first letter, pass through
        // this several times per request.
        var text = text
        guard let parsed = text.withUTF8({ Self.parse($0) }) else { return nil }
        self = parsed
    }

    /// The longest IPv6 text form, `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`: anything
    /// longer is refused before it is split into groups, so a long input costs nothing.
    static let maxIPv6TextLength = 45

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> IPAddress? {
        if bytes.contains(UInt8(ascii: ":")) {
            guard bytes.count <= maxIPv6TextLength else { return nil }
            return parseIPv6(Array(bytes)).flatMap { IPAddress(bytes: $0) }
        }
        return parseIPv4(bytes).flatMap { IPAddress(bytes: $0) }
    }

    /// Strict dotted-quad: four decimal parts 0-255, no leading zeros except "0" itself.
    public init?(ipv4 text: String) {
        guard let parsed = IPAddress.parseIPv4(text.utf8) else { return nil }
        self.family = .ipv4
        self.bytes = parsed
    }

    /// RFC 4291 section 2.2 text forms, including `::` and a trailing embedded IPv4; zone ids are rejected.
    public init?(ipv6 text: String) {
        guard text.utf8.count <= IPAddress.maxIPv6TextLength, let parsed = IPAddress.parseIPv6(Array(text.utf8))
        else { return nil }
        self.family = .ipv6
        self.bytes = parsed
    }

    /// Canonical text: dotted-quad, or RFC 5952 for IPv6.
    public var description: String {
        switch family {
        case .ipv4: return IPAddress.formatIPv4(bytes[...])
        case .ipv6: return IPAddress.formatIPv6(bytes)
        }
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, RFC 4291 section
    /// 2.5.5.2), else `self`: a connection to either reaches the same IPv4 host.
    public var unmappingIPv4: IPAddress {
        guard family == .ipv6, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff,
            let v4 = IPAddress(bytes: bytes[12...])
        else { return self }
        return v4
    }

    // MARK: - Parsing

    /// One pass, no allocation until it succeeds: host names (the common input) are refused at
    /// their first letter, and every URL and cookie domain goes through here.
    static func parseIPv4(_ text: some Collection<UInt8>) -> [UInt8]? {
        var parts: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        var part = 0
        var value = 0
        var digits = 0
        var leadingZero = false
        for byte in text {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, part < 3 else { return nil }
                withUnsafeMutableBytes(of: &parts) { $0[part] = UInt8(value) }
                part += 1
                value = 0
                digits = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            // No leading zeros ("010" is octal to other parsers) and at most three digits.
            if digits == 0 {
                leadingZero = byte == UInt8(ascii: "0")
            } else if leadingZero || digits == 3 {
                return nil
            }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            guard value <= 255 else { return nil }
        }
        guard digits > 0, part == 3 else { return nil }
        parts.3 = UInt8(value)
        return [parts.0, parts.1, parts.2, parts.3]
    }

    private static func parseIPv6(_ text: [UInt8]) -> [UInt8]? {
        let colon = UInt8(ascii: ":")
        // Locate a single "::"; a second one would make the zero run ambiguous.
        var doubleColon: Int?
        var index = 0
        while index + 1 < text.count {
            if text[index] == colon && text[index + 1] == colon {
                guard doubleColon == nil else { return nil }
                doubleColon = index
                index += 2
                continue
            }
            index += 1
        }
        let head: ArraySlice<UInt8>
        let tail: ArraySlice<UInt8>
        if let at = doubleColon {
            head = text[..<at]
            tail = text[(at + 2)...]
        } else {
            head = text[...]
            tail = []
        }
        // With "::" the embedded IPv4 may only end the tail; without it, only the head.
        guard let headGroups = parseGroups(head, mayEndInIPv4: doubleColon == nil) else { return nil }
        guard let tailGroups = parseGroups(tail, mayEndInIPv4: true) else { return nil }
        let total = headGroups.count + tailGroups.count
        if doubleColon == nil {
            guard total == 8 else { return nil }
        } else {
            // "::" stands for one or more zero groups (RFC 4291 section 2.2, form 2).
            guard total <= 7 else { return nil }
        }
        let groups = headGroups + Array(repeating: 0, count: 8 - total) + tailGroups
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for group in groups {
            bytes.append(UInt8(group >> 8))
            bytes.append(UInt8(group & 0xff))
        }
        return bytes
    }

    /// Colon-separated 16-bit groups of one side of "::"; an empty side has none.
    private static func parseGroups(_ text: ArraySlice<UInt8>, mayEndInIPv4: Bool) -> [UInt16]? {
        if text.isEmpty { return [] }
        let parts = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (position, part) in parts.enumerated() {
            if position == parts.count - 1, mayEndInIPv4, part.contains(UInt8(ascii: ".")) {
                guard let v4 = parseIPv4(part) else { return nil }
                groups.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                groups.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                continue
            }
            guard (1...4).contains(part.count) else { return nil }
            var value: UInt16 = 0
            for byte in part {
                guard let digit = hexValue(byte) else { return nil }
                value = value << 4 | UInt16(digit)
            }
            groups.append(value)
        }
        return groups.count <= 8 ? groups : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    // MARK: - Formatting

    /// RFC 5952 section 4: lowercase, no leading zeros, the longest run (of two or more) of zero
    /// groups becomes "::" (the first on a tie); section 5: IPv4-mapped addresses end in dotted-quad.
    /// Dotted decimal: the URL parser's (an IP URL's host is formatted on every cookie request
    /// that names one, so it is written byte by byte).
    static func formatIPv4(_ bytes: ArraySlice<UInt8>) -> String {
        HTTPURL.Host.dottedDecimal(bytes.reduce(0) { $0 << 8 | UInt32($1) })
    }

    private static func formatIPv6(_ bytes: [UInt8]) -> String {
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        if groups[0..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xffff {
            return "::ffff:" + formatIPv4(bytes[12...])
        }
        var bestStart = -1
        var bestLength = 1
        var runStart = -1
        for (index, group) in groups.enumerated() {
            if group == 0 {
                if runStart < 0 { runStart = index }
                let length = index - runStart + 1
                if length > bestLength {
                    bestStart = runStart
                    bestLength = length
                }
            } else {
                runStart = -1
            }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String {
            slice.map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(groups[...]) }
        return hex(groups[..<bestStart]) + "::" + hex(groups[(bestStart + bestLength)...])
    }
}
