/// An absolute `http` or `https` URL, with the parts an IP-direct request needs: the host to
/// resolve, the port a connection goes to, and the origin that credentials are scoped to.
public struct HTTPTarget: Sendable, Equatable, CustomStringConvertible {
    /// The URL as it will be requested (the text given, with spaces and 8-bit bytes percent-encoded).
    public let url: String
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// The host, lowercased; an IPv6 literal without its brackets.
    public let host: String
    /// The explicit port, else 80 or 443.
    public let port: UInt16
    /// Whether `host` is an IPv4 or IPv6 address rather than a name (nothing to resolve).
    public let isIPLiteral: Bool

    /// nil unless `text` is an absolute http(s) URL with a host and a valid port.
    public init?(_ text: String) {
        let encoded = Self.percentEncodingUnsafeBytes(text)
        let reference = URLReference(encoded)
        guard let rawScheme = reference.scheme, var authority = reference.authority else { return nil }
        let scheme = rawScheme.lowercased()
        let defaultPort: UInt16
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        var host: Substring
        var portText: Substring = ""
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
            // An IPv6 address must be in brackets.
            guard !host.contains(":") else { return nil }
        } else {
            host = Substring(authority)
        }
        guard !host.isEmpty, !host.contains(where: { $0 == "%" || $0 == "[" || $0 == "]" }) else { return nil }
        var port = defaultPort
        if !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt16(portText),
                value > 0
            else { return nil }
            port = value
        }
        self.url = encoded
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
        self.isIPLiteral = host.contains(":") || Self.isDottedQuad(host)
    }

    public var description: String { url }

    /// Two targets share an origin (RFC 6454) when scheme, host and port are equal: what decides
    /// whether credentials meant for one may go to the other.
    public func isSameOrigin(as other: HTTPTarget) -> Bool {
        scheme == other.scheme && host == other.host && port == other.port
    }

    /// The `host:port:addr[,addr...]` entry of curl's `--resolve` and libcurl's `CURLOPT_RESOLVE`,
    /// IPv6 addresses in brackets; nil when there is no address or the host is an IP literal.
    public func resolveEntry(addresses: [String]) -> String? {
        guard !isIPLiteral, !addresses.isEmpty else { return nil }
        let list = addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
        return "\(host):\(port):\(list)"
    }

    /// The target of a `Location` value received for this URL (RFC 9110 section 10.2.2: a
    /// relative reference resolves against the request URL, RFC 3986 section 5.2), or nil when
    /// the result is not an http(s) URL. A fragment-less Location keeps this URL's fragment.
    public func redirect(to location: String) -> HTTPTarget? {
        let reference = URLReference(Self.percentEncodingUnsafeBytes(location))
        var resolved = reference.resolved(against: URLReference(url))
        if resolved.fragment == nil { resolved.fragment = URLReference(url).fragment }
        return HTTPTarget(resolved.description)
    }

    /// Spaces, controls and 8-bit bytes percent-encoded, as curl does to a Location it follows.
    static func percentEncodingUnsafeBytes(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else { return text }
        var encoded = ""
        let hex = Array("0123456789ABCDEF")
        for byte in text.utf8 {
            if byte <= 0x20 || byte >= 0x7F {
                encoded += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xF)])
            } else {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return encoded
    }

    private static func isDottedQuad(_ host: Substring) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy { $0.isASCII && $0.isNumber } && Int(part)! <= 255
            }
    }
}
