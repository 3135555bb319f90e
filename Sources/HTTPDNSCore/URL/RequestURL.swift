import HTTPDNSProtocol

/// An absolute http, https, ws or wss URL, split into the parts the cookie jar needs.
///
/// The parser is deliberately strict: anything it does not understand is refused rather
/// than guessed at, because a mis-read host would file cookies under the wrong site.
/// It works on UTF-8 bytes and never traps, whatever the input.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased scheme: `http`, `https`, `ws` or `wss`.
    public let scheme: String
    /// Lowercased host as written (not IDNA-converted); IPv6 literals without brackets and
    /// in RFC 5952 form, IPv4 literals in dotted-quad form.
    public let host: String
    /// True when `host` is an IPv4 or IPv6 literal.
    public let isIPLiteral: Bool
    /// The explicit port, if the URL has one.
    public let port: UInt16?
    /// The path, percent-encoded as given; `""` when the URL has none.
    public let path: String
    /// The query without its `?`, if present.
    public let query: String?

    /// The schemes the jar serves.
    public static let supportedSchemes: Set<String> = ["http", "https", "ws", "wss"]

    /// https and wss use TLS, so they count as "secure" protocols (RFC 6265bis 5.8.3).
    public var isSecure: Bool { scheme == "https" || scheme == "wss" }

    /// The path for cookie matching: an empty path means "/" (as WHATWG URLs normalize it).
    public var cookiePath: String { path.isEmpty ? "/" : path }

    /// Parses `text`, or returns nil when it is not an absolute URL of a supported scheme.
    public init?(_ text: String) {
        guard let parts = text.withUTF8Bytes({ Self.parse($0) }) else { return nil }
        self = parts
    }

    /// `init(_:)` on UTF-8 bytes.
    public init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        guard let parts = Self.parse(bytes) else { return nil }
        self = parts
    }

    /// Builds a URL from parts; `host` must already be in canonical form.
    public init(scheme: String, host: String, port: UInt16?, path: String, query: String?) {
        self.init(
            scheme: scheme, host: host, isIPLiteral: IPLiteral.address(host) != nil, port: port, path: path,
            query: query)
    }

    /// The parser knows whether the host is an IP literal: it need not be parsed again.
    private init(scheme: String, host: String, isIPLiteral: Bool, port: UInt16?, path: String, query: String?) {
        self.scheme = scheme
        self.host = host
        self.isIPLiteral = isIPLiteral
        self.port = port
        self.path = path
        self.query = query
    }

    /// The same URL with another host (used to substitute a host name for an IP literal).
    public func replacingHost(_ newHost: String) -> RequestURL {
        if CookieMatching.same(newHost, host) { return self }
        return RequestURL(scheme: scheme, host: newHost, port: port, path: path, query: query)
    }

    public var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let portPart = port.map { ":\($0)" } ?? ""
        let queryPart = query.map { "?\($0)" } ?? ""
        return "\(scheme)://\(hostPart)\(portPart)\(path)\(queryPart)"
    }

    // The parser walks integer offsets over the bytes: slices and their generic algorithms
    // measured as a seventh of a cookie lookup.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> RequestURL? {
        let count = bytes.count
        // Spaces and control characters are refused anywhere (no silent trimming).
        guard !containsSpaceOrControl(bytes) else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            let scheme = supportedScheme(UnsafeBufferPointer(rebasing: bytes[..<colon]))
        else { return nil }
        let authorityStart = colon + 3
        guard count >= authorityStart, bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        else { return nil }
        var authorityEnd = authorityStart
        // Userinfo ends at the authority's last "@"; it plays no part in cookie scoping.
        var hostStart = authorityStart
        while authorityEnd < count {
            let byte = bytes[authorityEnd]
            if isAuthorityTerminator(byte) { break }
            if byte == UInt8(ascii: "@") { hostStart = authorityEnd + 1 }
            authorityEnd += 1
        }
        guard let (host, isIPLiteral, port) = parseHostAndPort(bytes, hostStart..<authorityEnd) else { return nil }

        var pathEnd = authorityEnd
        while pathEnd < count, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") {
            pathEnd += 1
        }
        let path = string(bytes, authorityEnd..<pathEnd)
        var query: String?
        if pathEnd < count, bytes[pathEnd] == UInt8(ascii: "?") {
            var queryEnd = pathEnd + 1
            while queryEnd < count, bytes[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
            query = string(bytes, (pathEnd + 1)..<queryEnd)
        }
        return RequestURL(scheme: scheme, host: host, isIPLiteral: isIPLiteral, port: port, path: path, query: query)
    }

    /// A byte of 0x20 or below, or 0x7F, eight bytes a step.
    private static func containsSpaceOrControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteWords.firstIndex(
            in: bytes, flags: { ByteWords.below($0, 0x21) | ByteWords.equal($0, 0x7F) },
            isMatch: { $0 <= 0x20 || $0 == 0x7F }) != nil
    }

    private static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        range.isEmpty ? "" : String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The scheme as one of `supportedSchemes` (ASCII case-insensitively), without building a string.
    private static func supportedScheme(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        func isScheme(_ name: StaticString) -> Bool { equalsIgnoringASCIICase(bytes, name) }
        if isScheme("https") { return "https" }
        if isScheme("http") { return "http" }
        if isScheme("wss") { return "wss" }
        if isScheme("ws") { return "ws" }
        return nil
    }

    private static func isAuthorityTerminator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
            || byte == UInt8(ascii: "\\")
    }

    private static func parseHostAndPort(
        _ bytes: UnsafeBufferPointer<UInt8>, _ authority: Range<Int>
    ) -> (host: String, isIPLiteral: Bool, port: UInt16?)? {
        guard !authority.isEmpty else { return nil }
        // The host ends at the first "]" of a bracketed literal, else at the first ":".
        let hostEnd: Int
        if bytes[authority.lowerBound] == UInt8(ascii: "[") {
            guard let close = authority.first(where: { bytes[$0] == UInt8(ascii: "]") }) else { return nil }
            hostEnd = close + 1
        } else {
            hostEnd = authority.first(where: { bytes[$0] == UInt8(ascii: ":") }) ?? authority.upperBound
        }
        var port: UInt16?
        if hostEnd < authority.upperBound {
            guard bytes[hostEnd] == UInt8(ascii: ":") else { return nil }
            // An empty port (`host:`) means the default port (RFC 3986 section 3.2.3).
            let digits = (hostEnd + 1)..<authority.upperBound
            if !digits.isEmpty {
                guard digits.count <= 5 else { return nil }
                var value = 0
                for index in digits {
                    let byte = bytes[index]
                    guard byte >= 0x30 && byte <= 0x39 else { return nil }
                    value = value * 10 + Int(byte - 0x30)
                }
                guard value <= 65535 else { return nil }
                port = UInt16(value)
            }
        }
        let hostRange = authority.lowerBound..<hostEnd
        guard !hostRange.isEmpty else { return nil }
        let host = UnsafeBufferPointer(rebasing: bytes[hostRange])
        if host[0] == UInt8(ascii: "[") {
            guard host.count >= 2, host[host.count - 1] == UInt8(ascii: "]"),
                let v6 = IPAddress(
                    ipv6: String(decoding: UnsafeBufferPointer(rebasing: host.dropFirst().dropLast()), as: UTF8.self))
            else { return nil }
            return (v6.description, true, port)
        }
        if let v4 = IPAddress.parseIPv4(host).flatMap({ IPAddress(bytes: $0) }) {
            return (v4.description, true, port)
        }
        var hasUppercase = false
        var lastLabelAllDigits = false
        var lastLabelEmpty = true
        for byte in host {
            guard isHostByte(byte) else { return nil }
            if byte == UInt8(ascii: ".") {
                lastLabelEmpty = true
                lastLabelAllDigits = false
                continue
            }
            let isDigit = byte >= 0x30 && byte <= 0x39
            lastLabelAllDigits = isDigit && (lastLabelEmpty || lastLabelAllDigits)
            lastLabelEmpty = false
            hasUppercase = hasUppercase || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
        }
        // A host whose last label is a number must be an IPv4 address (WHATWG "ends in a
        // number"); anything else of that shape is refused rather than read as a name.
        if lastLabelAllDigits { return nil }
        guard hasUppercase else { return (String(decoding: host, as: UTF8.self), false, port) }
        return (asciiLowercasedString(host), false, port)
    }

    /// Letters, digits, `-`, `.`, `_`, `~` and non-ASCII bytes (IDNA host names as written).
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return byte >= 0x80
        }
    }
}
