import HTTPDNSProtocol

/// A `Set-Cookie` value after RFC 6265bis section 5.6 parsing, before the storage model
/// (section 5.7) has looked at the request it came from.
public struct ParsedSetCookie: Sendable, Equatable {
    public var name: String
    public var value: String
    /// The last valid `Expires`, in Unix seconds (not yet capped).
    public var expires: Int64?
    /// The last valid `Max-Age`, in seconds (may be zero or negative).
    public var maxAge: Int64?
    /// The last `Domain` value: leading dot removed, ASCII-lowercased, possibly empty.
    public var domain: String?
    /// The last `Path` value as written (the storage model applies the default-path rule).
    public var path: String?
    public var secure = false
    public var httpOnly = false
    /// The enforcement of the last `SameSite` attribute, nil when there is none.
    public var sameSite: CookieSameSite?
    public var partitioned = false

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The parsing algorithms of RFC 6265bis section 5.6, step by step, over the header's UTF-8 in
/// place: each piece is a range of offsets, and only the parts kept become strings.
public enum SetCookieParser {
    /// Section 5.6 step 5: name plus value may hold at most 4096 octets.
    public static let maxNameValueOctets = 4096
    /// Section 5.6 (attributes) step 6: a longer attribute-value is ignored.
    public static let maxAttributeValueOctets = 1024

    /// Parses one set-cookie-string, or says why the whole string is ignored.
    public static func parse(_ setCookieString: String) -> Result<ParsedSetCookie, CookieRejection> {
        setCookieString.withUTF8Bytes { parse($0) }
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<ParsedSetCookie, CookieRejection> {
        // Step 1: CTLs other than HTAB anywhere reject the whole string. This is also what
        // keeps CR and LF out of every Cookie header the jar builds.
        if containsForbiddenControl(bytes) { return .failure(.syntax) }

        // Step 2: the name-value-pair runs up to the first ";".
        let semicolon = firstIndex(of: UInt8(ascii: ";"), in: bytes, 0..<bytes.count)
        let pair = 0..<semicolon

        // Step 3: without "=", the name is empty and the whole pair is the value.
        let equals = firstIndex(of: UInt8(ascii: "="), in: bytes, pair)
        let nameRange = equals < semicolon ? 0..<equals : 0..<0
        let valueRange = equals < semicolon ? equals + 1..<semicolon : pair
        // Step 4: trim WSP.
        let name = trimWSP(bytes, nameRange)
        let value = trimWSP(bytes, valueRange)
        // Step 5: size limit.
        if name.count + value.count > maxNameValueOctets { return .failure(.tooLarge) }

        var cookie = ParsedSetCookie(name: string(bytes, name), value: string(bytes, value))
        parseAttributes(bytes, from: semicolon, into: &cookie)
        return .success(cookie)
    }

    /// %x00-08 / %x0A-1F / %x7F: every CTL except HTAB.
    public static func isForbiddenControl(_ byte: UInt8) -> Bool {
        byte <= 0x08 || (byte >= 0x0A && byte <= 0x1F) || byte == 0x7F
    }

    /// Whether `bytes` hold a CTL other than HTAB, eight bytes a step: the words flag every CTL,
    /// and a flagged HTAB resumes the search after it.
    static func containsForbiddenControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var start = 0
        while start < bytes.count,
            let found = ByteWords.firstIndex(
                in: UnsafeBufferPointer(rebasing: bytes[start...]),
                flags: { ByteWords.below($0, 0x20) | ByteWords.equal($0, 0x7F) },
                isMatch: { $0 < 0x20 || $0 == 0x7F })
        {
            if bytes[start + found] != 0x09 { return true }
            start += found + 1
        }
        return false
    }

    /// The unparsed-attributes loop of section 5.6, from `start` (a ";" or the end).
    static func parseAttributes(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, into cookie: inout ParsedSetCookie
    ) {
        var position = start
        while position < bytes.count {
            position += 1  // Step 2: the ";".
            let end = firstIndex(of: UInt8(ascii: ";"), in: bytes, position..<bytes.count)
            let cookieAV = position..<end
            position = end

            let attributeName: Range<Int>
            let attributeValue: Range<Int>
            let equals = firstIndex(of: UInt8(ascii: "="), in: bytes, cookieAV)
            if equals < end {
                attributeName = trimWSP(bytes, cookieAV.lowerBound..<equals)
                attributeValue = trimWSP(bytes, equals + 1..<end)
            } else {
                attributeName = trimWSP(bytes, cookieAV)
                attributeValue = end..<end
            }
            if attributeValue.count > maxAttributeValueOctets { continue }
            process(bytes, name: attributeName, value: attributeValue, into: &cookie)
        }
    }

    static func process(
        _ bytes: UnsafeBufferPointer<UInt8>, name: Range<Int>, value: Range<Int>, into cookie: inout ParsedSetCookie
    ) {
        let nameBytes = UnsafeBufferPointer(rebasing: bytes[name])
        func nameIs(_ literal: StaticString) -> Bool { equalsIgnoringASCIICase(nameBytes, literal) }
        // The length picks the one or two names worth comparing.
        switch name.count {
        case 4 where nameIs("path"):
            cookie.path = string(bytes, value)
        case 6 where nameIs("domain"):
            // 5.6.3: drop one leading ".", lowercase.
            var domain = value
            if let first = domain.first, bytes[first] == UInt8(ascii: ".") { domain = domain.dropFirst() }
            cookie.domain = asciiLowercasedString(UnsafeBufferPointer(rebasing: bytes[domain]))
        case 6 where nameIs("secure"):
            cookie.secure = true
        case 7 where nameIs("expires"):
            // 5.6.1: an unparsable date leaves the attribute out.
            if let date = CookieDate.parse(bytes: UnsafeBufferPointer(rebasing: bytes[value])) {
                cookie.expires = date
            }
        case 7 where nameIs("max-age"):
            if let delta = parseMaxAge(bytes, value) { cookie.maxAge = delta }
        case 8 where nameIs("httponly"):
            cookie.httpOnly = true
        case 8 where nameIs("samesite"):
            cookie.sameSite = sameSite(bytes, value)
        case 11 where nameIs("partitioned"):
            cookie.partitioned = true
        default:
            break  // Unknown attributes are ignored.
        }
    }

    /// 5.6.7: the enforcement a SameSite attribute-value names; anything else is "Default".
    private static func sameSite(_ bytes: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> CookieSameSite {
        let text = UnsafeBufferPointer(rebasing: bytes[value])
        if equalsIgnoringASCIICase(text, "none") { return CookieSameSite.none }
        if equalsIgnoringASCIICase(text, "strict") { return .strict }
        if equalsIgnoringASCIICase(text, "lax") { return .lax }
        return .default
    }

    /// 5.6.2 steps 1-3: a DIGIT or "-" DIGIT first, then only DIGITs. Values beyond Int64
    /// saturate (they are capped to 400 days or treated as expired anyway).
    static func parseMaxAge(_ bytes: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Int64? {
        var digits = value
        let negative = !digits.isEmpty && bytes[digits.lowerBound] == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ CookieDate.isDigit(bytes[$0]) }) else { return nil }
        var result: Int64 = 0
        for index in digits {
            let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(bytes[index] - 0x30))
            if overflow1 || overflow2 { return negative ? Int64.min : Int64.max }
            result = sum
        }
        return negative ? -result : result
    }

    /// The first `byte` in `range`, else its end.
    private static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int {
        let found = ByteWords.firstIndex(
            in: UnsafeBufferPointer(rebasing: bytes[range]), flags: { ByteWords.equal($0, byte) },
            isMatch: { $0 == byte })
        return found.map { range.lowerBound + $0 } ?? range.upperBound
    }

    /// `range` without its leading and trailing SP and HTAB.
    static func trimWSP(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        func isWSP(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, isWSP(bytes[lower]) { lower += 1 }
        while upper > lower, isWSP(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }

    /// The input was valid UTF-8 and is only split at ASCII bytes, so decoding is lossless.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}
