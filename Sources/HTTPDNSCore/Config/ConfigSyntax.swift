import HTTPDNSURL

/// Syntax checks for the values the configuration holds: host names, IP literals, URLs, paths.
///
/// These only decide whether a value is acceptable in a config file. The resolver's own
/// `HostName`/`IPAddress` types (Net/) remain the authority at run time, and `Static=` addresses
/// should be canonicalised through `IPAddress` when the daemon loads them.
enum ConfigSyntax {
    /// The host name lowercased without one trailing dot, or nil when it is not an ASCII DNS name
    /// (RFC 1035 section 2.3.4 lengths; letters, digits, hyphen and underscore; no hyphen at a
    /// label's edge).
    static func hostName(_ raw: String) -> String? {
        var name = raw.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-" else { return nil }
            let allowed = label.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
            }
            guard allowed else { return nil }
        }
        return name
    }

    /// Whether `host` can name a server in an upstream URL or `Redis=`: a dotted quad, or a host name whose
    /// last label is not a number. URL parsers, curl and inet_aton read a name ending in a number as an IPv4
    /// address (`203.0.056.1` is 203.0.46.1, `056` being octal), so it would reach another machine than
    /// the one the same text names in `Static=`.
    static func isServerHost(_ host: some StringProtocol) -> Bool {
        if isIPv4(host) { return true }
        guard let name = hostName(String(host)), let last = name.split(separator: ".").last else { return false }
        let isDecimal = last.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        let isHex = last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit)
        return !isDecimal && !isHex
    }

    /// Whether `text` is an IPv4 dotted quad or an RFC 4291 IPv6 text address (no zone id).
    static func isIPAddress(_ text: String) -> Bool {
        isIPv4(text) || isIPv6(text)
    }

    /// Four decimal parts 0-255 without leading zeros (leading zeros read as octal elsewhere). `IPAddress` decides,
    /// so the configuration accepts exactly the addresses the resolver can use.
    static func isIPv4(_ text: some StringProtocol) -> Bool {
        IPAddress(ipv4: String(text)) != nil
    }

    /// RFC 4291 text, ASCII only: `IPAddress` decides (a grammar of Characters would take fullwidth digits).
    static func isIPv6(_ text: String) -> Bool {
        IPAddress(ipv6: text) != nil
    }

    /// Why `url` is not an absolute http(s) URL with a host, or nil when it is one. The URL is
    /// read by the URL Standard parser the cookie jar uses (`HTTPURL`), and must be read the same
    /// way by RFC 3986 readers such as libcurl. The message repeats the URL only when it has no
    /// `@` (user information may hold a password).
    static func httpURLProblem(_ url: String) -> String? {
        guard !url.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false })
        else { return "URL contains whitespace or control characters" }
        let quoted = url.contains("@") ? "the URL" : "\"\(url)\""
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            return "not an http:// or https:// URL: \(quoted)"
        }
        guard let parsed = HTTPURL(url) else { return "invalid host or port in \(quoted)" }
        // An empty user information ("http://@host") parses to no user name: its "@" is missing
        // from the serialization, while an "@" of the path or query stays.
        let atSigns = { (text: String) in text.utf8.lazy.filter { $0 == UInt8(ascii: "@") }.count }
        guard parsed.username.isEmpty, parsed.password.isEmpty, atSigns(parsed.description) == atSigns(url) else {
            return "URL must not contain user information"
        }
        guard parsed.fragment == nil else { return "URL must not contain a fragment: \(quoted)" }
        guard parsed.agreesWithRFC3986(url) else {
            return "invalid host (an RFC 3986 reader such as curl would take another one) in \(quoted)"
        }
        if case .domain(let name) = parsed.host, !isServerHost(name) { return "invalid host in \(quoted)" }
        guard parsed.port != 0 else { return "invalid port in \(quoted)" }
        return nil
    }

    /// Whether `text` has a character that cannot be part of a secret or a single token.
    static func hasWhitespaceOrControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }
}
