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

/// The parsing algorithms of RFC 6265bis section 5.6, step by step.
public enum SetCookieParser {
    /// Section 5.6 step 5: name plus value may hold at most 4096 octets.
    public static let maxNameValueOctets = 4096
    /// Section 5.6 (attributes) step 6: a longer attribute-value is ignored.
    public static let maxAttributeValueOctets = 1024

    /// Parses one set-cookie-string, or says why the whole string is ignored.
    public static func parse(_ setCookieString: String) -> Result<ParsedSetCookie, CookieRejection> {
        let bytes = Array(setCookieString.utf8)
        // Step 1: CTLs other than HTAB anywhere reject the whole string. This is also what
        // keeps CR and LF out of every Cookie header the jar builds.
        if bytes.contains(where: isForbiddenControl) { return .failure(.syntax) }

        // Step 2: the name-value-pair runs up to the first ";".
        let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<semicolon]

        // Step 3: without "=", the name is empty and the whole pair is the value.
        let nameBytes: ArraySlice<UInt8>
        let valueBytes: ArraySlice<UInt8>
        if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
            nameBytes = pair[..<equals]
            valueBytes = pair[(equals + 1)...]
        } else {
            nameBytes = []
            valueBytes = pair
        }
        // Step 4: trim WSP.
        let name = trimWSP(nameBytes)
        let value = trimWSP(valueBytes)
        // Step 5: size limit.
        if name.count + value.count > maxNameValueOctets { return .failure(.tooLarge) }

        var cookie = ParsedSetCookie(name: string(name), value: string(value))
        parseAttributes(bytes[semicolon...], into: &cookie)
        return .success(cookie)
    }

    /// %x00-08 / %x0A-1F / %x7F: every CTL except HTAB.
    public static func isForbiddenControl(_ byte: UInt8) -> Bool {
        byte <= 0x08 || (byte >= 0x0A && byte <= 0x1F) || byte == 0x7F
    }

    /// The unparsed-attributes loop of section 5.6.
    static func parseAttributes(_ unparsed: ArraySlice<UInt8>, into cookie: inout ParsedSetCookie) {
        var remaining = unparsed
        while !remaining.isEmpty {
            remaining = remaining.dropFirst()  // Step 2: the ";".
            let end = remaining.firstIndex(of: UInt8(ascii: ";")) ?? remaining.endIndex
            let cookieAV = remaining[..<end]
            remaining = remaining[end...]

            let attributeName: ArraySlice<UInt8>
            let attributeValue: ArraySlice<UInt8>
            if let equals = cookieAV.firstIndex(of: UInt8(ascii: "=")) {
                attributeName = trimWSP(cookieAV[..<equals])
                attributeValue = trimWSP(cookieAV[(equals + 1)...])
            } else {
                attributeName = trimWSP(cookieAV)
                attributeValue = []
            }
            if attributeValue.count > maxAttributeValueOctets { continue }
            process(name: attributeName, value: attributeValue, into: &cookie)
        }
    }

    static func process(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>, into cookie: inout ParsedSetCookie) {
        switch string(name.map(asciiLowercased)[...]) {
        case "expires":
            // 5.6.1: an unparsable date leaves the attribute out.
            if let date = CookieDate.parse(bytes: Array(value)) { cookie.expires = date }
        case "max-age":
            if let delta = parseMaxAge(value) { cookie.maxAge = delta }
        case "domain":
            // 5.6.3: drop one leading ".", lowercase.
            var domain = value
            if domain.first == UInt8(ascii: ".") { domain = domain.dropFirst() }
            cookie.domain = string(domain.map(asciiLowercased)[...])
        case "path":
            cookie.path = string(value)
        case "secure":
            cookie.secure = true
        case "httponly":
            cookie.httpOnly = true
        case "samesite":
            switch string(value.map(asciiLowercased)[...]) {
            case "none": cookie.sameSite = CookieSameSite.none
            case "strict": cookie.sameSite = .strict
            case "lax": cookie.sameSite = .lax
            default: cookie.sameSite = .default
            }
        case "partitioned":
            cookie.partitioned = true
        default:
            break  // Unknown attributes are ignored.
        }
    }

    /// 5.6.2 steps 1-3: a DIGIT or "-" DIGIT first, then only DIGITs. Values beyond Int64
    /// saturate (they are capped to 400 days or treated as expired anyway).
    static func parseMaxAge(_ value: ArraySlice<UInt8>) -> Int64? {
        var digits = value
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy(CookieDate.isDigit) else { return nil }
        var result: Int64 = 0
        for byte in digits {
            let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            if overflow1 || overflow2 { return negative ? Int64.min : Int64.max }
            result = sum
        }
        return negative ? -result : result
    }

    /// Removes leading and trailing SP and HTAB.
    static func trimWSP(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    /// The input was valid UTF-8 and is only split at ASCII bytes, so decoding is lossless.
    static func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
