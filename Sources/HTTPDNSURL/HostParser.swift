/// The URL Standard's host parser for special schemes: IPv6 in brackets, else a percent-decoded
/// domain converted to ASCII, checked for forbidden code points, and read as an IPv4 address
/// when it ends in a number.
enum HostParser {
    static func parse(_ input: UnsafeBufferPointer<UInt8>, toASCII: DomainToASCII?) -> HTTPURL.Host? {
        guard !input.isEmpty else { return nil }
        if input[0] == UInt8(ascii: "[") {
            guard input.count >= 2, input[input.count - 1] == UInt8(ascii: "]") else { return nil }
            return parseIPv6(UnsafeBufferPointer(rebasing: input[1..<(input.count - 1)])).map(HTTPURL.Host.ipv6)
        }
        let decoded = PercentEncoding.decode(input)
        guard let ascii = domainToASCII(decoded, toASCII: toASCII), !ascii.isEmpty else { return nil }
        var utf8 = Array(ascii.utf8)
        guard !utf8.contains(where: isForbiddenDomainByte) else { return nil }
        return utf8.withUnsafeMutableBufferPointer { bytes in
            if endsInANumber(UnsafeBufferPointer(bytes)) {
                return parseIPv4(UnsafeBufferPointer(bytes)).map(HTTPURL.Host.ipv4)
            }
            return .domain(ascii)
        }
    }

    /// The most UTF-8 of a domain whose A-labels fit DNS (each code point is at least an octet of
    /// its A-label, at most four of UTF-8). The daemon's `toASCII` refuses longer ones (libidn2
    /// maps every code point, so its time grows with the input); refused here before they are
    /// decoded again.
    static let maxIDNAInput = 4 * 253

    /// "Domain to ASCII" with beStrict false: an ASCII domain without an `xn--` label is only
    /// lowercased (the standard notes that UTS #46 does exactly that to it); anything else goes
    /// to `toASCII` (UTF-8 decoded, invalid sequences as U+FFFD), and nil without one.
    static func domainToASCII(_ bytes: [UInt8], toASCII: DomainToASCII?) -> String? {
        var needsIDNA = false
        var labelStart = 0
        for index in 0...bytes.count {
            if index == bytes.count || bytes[index] == UInt8(ascii: ".") {
                if index - labelStart >= 4, URLParser.lowercased(bytes[labelStart]) == UInt8(ascii: "x"),
                    URLParser.lowercased(bytes[labelStart + 1]) == UInt8(ascii: "n"),
                    bytes[labelStart + 2] == UInt8(ascii: "-"), bytes[labelStart + 3] == UInt8(ascii: "-")
                {
                    needsIDNA = true
                }
                labelStart = index + 1
            } else if bytes[index] >= 0x80 {
                needsIDNA = true
            }
        }
        guard needsIDNA else { return String(decoding: bytes.map(URLParser.lowercased), as: UTF8.self) }
        guard bytes.count <= maxIDNAInput, let toASCII, let result = toASCII(String(decoding: bytes, as: UTF8.self)),
            result.utf8.allSatisfy({ $0 < 0x80 })
        else { return nil }
        return String(decoding: result.utf8.map(URLParser.lowercased), as: UTF8.self)
    }

    /// Forbidden domain code points: C0 controls, space, # % / : < > ? @ [ \ ] ^ | and DEL.
    static func isForbiddenDomainByte(_ byte: UInt8) -> Bool {
        if byte <= 0x20 || byte == 0x7F { return true }
        switch byte {
        case UInt8(ascii: "#"), UInt8(ascii: "%"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "<"),
            UInt8(ascii: ">"), UInt8(ascii: "?"), UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "\\"),
            UInt8(ascii: "]"), UInt8(ascii: "^"), UInt8(ascii: "|"):
            return true
        default:
            return false
        }
    }

    // MARK: IPv4

    /// The last label (ignoring one trailing dot) is all digits, or parses as an IPv4 number.
    static func endsInANumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var end = bytes.count
        if end > 0 && bytes[end - 1] == UInt8(ascii: ".") {
            // A lone "." has no last label.
            if end == 1 { return false }
            end -= 1
        }
        var start = end
        while start > 0 && bytes[start - 1] != UInt8(ascii: ".") { start -= 1 }
        let last = UnsafeBufferPointer(rebasing: bytes[start..<end])
        if !last.isEmpty && last.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) { return true }
        return parseIPv4Number(last) != nil
    }

    /// One to four numbers (decimal, 0x hexadecimal or 0-led octal), the last filling the
    /// remaining bytes.
    static func parseIPv4(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32? {
        var end = bytes.count
        if end > 0 && bytes[end - 1] == UInt8(ascii: ".") && end > 1 { end -= 1 }
        var numbers: [UInt64] = []
        var start = 0
        for index in 0...end where index == end || bytes[index] == UInt8(ascii: ".") {
            guard numbers.count < 4, let number = parseIPv4Number(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            else { return nil }
            numbers.append(number)
            start = index + 1
        }
        for number in numbers.dropLast() where number > 255 { return nil }
        guard let last = numbers.last, last < UInt64(1) << (8 * (5 - numbers.count)) else { return nil }
        var address = last
        for (position, number) in numbers.dropLast().enumerated() {
            address += number << (8 * (3 - position))
        }
        return UInt32(address)
    }

    /// nil on failure; values past 2^32 are capped there (they fail either way).
    static func parseIPv4Number(_ input: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard !input.isEmpty else { return nil }
        var radix: UInt64 = 10
        var start = 0
        if input.count >= 2, input[0] == UInt8(ascii: "0"), input[1] | 0x20 == UInt8(ascii: "x") {
            radix = 16
            start = 2
        } else if input.count >= 2, input[0] == UInt8(ascii: "0") {
            radix = 8
            start = 1
        }
        var value: UInt64 = 0
        for byte in input[start...] {
            guard let digit = PercentEncoding.hexValue(byte).map(UInt64.init), digit < radix else { return nil }
            value = min(value * radix + digit, UInt64(1) << 33)
        }
        return value
    }

    // MARK: IPv6

    static func parseIPv6(_ input: UnsafeBufferPointer<UInt8>) -> HTTPURL.IPv6Address? {
        var address = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var p = 0
        let n = input.count
        func at(_ index: Int) -> UInt8? { index < n ? input[index] : nil }
        if at(p) == UInt8(ascii: ":") {
            guard at(p + 1) == UInt8(ascii: ":") else { return nil }
            p += 2
            pieceIndex += 1
            compress = pieceIndex
        }
        while let c = at(p) {
            guard pieceIndex != 8 else { return nil }
            if c == UInt8(ascii: ":") {
                guard compress == nil else { return nil }
                p += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt16 = 0
            var length = 0
            while length < 4, let digit = at(p).flatMap(PercentEncoding.hexValue) {
                value = value * 0x10 + UInt16(digit)
                p += 1
                length += 1
            }
            if at(p) == UInt8(ascii: ".") {
                guard length != 0 else { return nil }
                p -= length
                guard pieceIndex <= 6 else { return nil }
                var numbersSeen = 0
                while at(p) != nil {
                    var ipv4Piece: UInt16?
                    if numbersSeen > 0 {
                        guard at(p) == UInt8(ascii: "."), numbersSeen < 4 else { return nil }
                        p += 1
                    }
                    guard let first = at(p), first &- UInt8(ascii: "0") < 10 else { return nil }
                    while let digitByte = at(p), digitByte &- UInt8(ascii: "0") < 10 {
                        let number = UInt16(digitByte &- UInt8(ascii: "0"))
                        if let piece = ipv4Piece {
                            guard piece != 0 else { return nil }
                            ipv4Piece = piece * 10 + number
                        } else {
                            ipv4Piece = number
                        }
                        guard ipv4Piece! <= 255 else { return nil }
                        p += 1
                    }
                    _ = first
                    address[pieceIndex] = address[pieceIndex] * 0x100 + ipv4Piece!
                    numbersSeen += 1
                    if numbersSeen == 2 || numbersSeen == 4 { pieceIndex += 1 }
                }
                guard numbersSeen == 4 else { return nil }
                break
            } else if at(p) == UInt8(ascii: ":") {
                p += 1
                guard at(p) != nil else { return nil }
            } else if at(p) != nil {
                return nil
            }
            address[pieceIndex] = value
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0 && swaps > 0 {
                address.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return HTTPURL.IPv6Address(pieces: address)
    }
}
