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
        var text = text
        guard let parts = text.withUTF8({ Self.parse($0) }) else { return nil }
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

    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> RequestURL? {
        // Spaces and control characters are refused anywhere (no silent trimming).
        guard !bytes.isEmpty, !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        guard let scheme = supportedScheme(bytes[..<colon]) else { return nil }
        var index = colon + 1
        guard bytes.count >= index + 2, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else {
            return nil
        }
        index += 2
        var authorityEnd = index
        while authorityEnd < bytes.count, !isAuthorityTerminator(bytes[authorityEnd]) { authorityEnd += 1 }
        var authority = bytes[index..<authorityEnd]
        // Drop user information; it plays no part in cookie scoping.
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            authority = authority[(at + 1)...]
        }
        guard let (host, isIPLiteral, port) = parseHostAndPort(authority) else { return nil }

        var pathEnd = authorityEnd
        while pathEnd < bytes.count, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") {
            pathEnd += 1
        }
        let path = String(decoding: bytes[authorityEnd..<pathEnd], as: UTF8.self)
        var query: String?
        if pathEnd < bytes.count, bytes[pathEnd] == UInt8(ascii: "?") {
            var queryEnd = pathEnd + 1
            while queryEnd < bytes.count, bytes[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
            query = String(decoding: bytes[(pathEnd + 1)..<queryEnd], as: UTF8.self)
        }
        return RequestURL(scheme: scheme, host: host, isIPLiteral: isIPLiteral, port: port, path: path, query: query)
    }

    /// The scheme as one of `supportedSchemes` (ASCII case-insensitively), without building a string.
    private static func supportedScheme(_ bytes: Bytes) -> String? {
        func isScheme(_ name: StaticString) -> Bool {
            guard bytes.count == name.utf8CodeUnitCount else { return false }
            for (offset, byte) in bytes.enumerated() where asciiLowercased(byte) != name.utf8Start[offset] {
                return false
            }
            return true
        }
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

    private static func parseHostAndPort(_ authority: Bytes) -> (host: String, isIPLiteral: Bool, port: UInt16?)? {
        guard !authority.isEmpty else { return nil }
        var hostBytes: Bytes
        var rest: Bytes
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[authority.startIndex...close]
            rest = authority[(close + 1)...]
        } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            rest = authority[colon...]
        } else {
            hostBytes = authority
            rest = authority[authority.endIndex...]
        }
        var port: UInt16?
        if !rest.isEmpty {
            guard rest.first == UInt8(ascii: ":") else { return nil }
            let digits = rest.dropFirst()
            // An empty port (`host:`) means the default port (RFC 3986 section 3.2.3).
            if !digits.isEmpty {
                guard digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                guard value <= 65535 else { return nil }
                port = UInt16(value)
            }
        }
        guard !hostBytes.isEmpty else { return nil }
        if hostBytes.first == UInt8(ascii: "[") {
            guard hostBytes.last == UInt8(ascii: "]"),
                let v6 = IPAddress(ipv6: String(decoding: hostBytes.dropFirst().dropLast(), as: UTF8.self))
            else { return nil }
            return (v6.description, true, port)
        }
        if let v4 = IPAddress.parseIPv4(hostBytes).flatMap({ IPAddress(bytes: $0) }) {
            return (v4.description, true, port)
        }
        guard hostBytes.allSatisfy(isHostByte) else { return nil }
        // A host whose last label is a number must be an IPv4 address (WHATWG "ends in a
        // number"); anything else of that shape is refused rather than read as a name.
        let lastLabel = hostBytes[((hostBytes.lastIndex(of: UInt8(ascii: ".")) ?? hostBytes.startIndex - 1) + 1)...]
        if !lastLabel.isEmpty, lastLabel.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return nil }
        let hasUppercase = hostBytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        let host =
            hasUppercase
            ? String(decoding: hostBytes.map(asciiLowercased), as: UTF8.self)
            : String(decoding: hostBytes, as: UTF8.self)
        return (host, false, port)
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

@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
}
