/// Host-name knowledge the cookie jar needs but Core cannot have without C libraries:
/// IDNA canonicalization and the public suffix list. `HTTPDNSPSL.PublicSuffixRules` is the
/// real one (libidn2 + libpsl); tests bring small ASCII-only stand-ins.
public protocol DomainRules: Sendable {
    /// The canonical form of a host name (RFC 6265bis 5.1.2): lowercase, every label an
    /// A-label. IP literals come back in `IPLiteral` canonical form. Nil when `host` is not
    /// a valid host name.
    func canonicalHost(_ host: String) -> String?
    /// True when the canonical `domain` is a public suffix, ICANN or private section
    /// (`com`, `co.uk`, `github.io`).
    func isPublicSuffix(_ domain: String) -> Bool
    /// The public suffix plus one label (`a.b.example.co.uk` -> `example.co.uk`); nil for IP
    /// literals and for hosts that are themselves public suffixes.
    func registrableDomain(_ host: String) -> String?
}

/// Syntax checks on ASCII host names, shared by every `DomainRules`.
public enum HostNameSyntax {
    /// RFC 1035 section 2.3.4: a label holds at most 63 octets.
    public static let maxLabelLength = 63
    /// RFC 1035 section 2.3.4: a name holds at most 255 octets on the wire, 253 as text.
    public static let maxNameLength = 253

    /// Lowercases and validates an ASCII host name: non-empty labels of letters, digits,
    /// `-` and `_` (seen in real host names), optionally one trailing dot, and a last label
    /// that is not all digits (such a host must be an IPv4 address). IP literals are
    /// returned in canonical form. Nil for anything else, including non-ASCII input.
    public static func canonicalASCII(_ host: String) -> String? {
        isCanonical(host) ? host : checkedCanonicalASCII(host)
    }

    /// `canonicalASCII` without its fast lane (tests hold the two against each other).
    static func checkedCanonicalASCII(_ host: String) -> String? {
        if let ip = IPLiteral.canonical(host) { return ip }
        let utf8 = host.utf8
        guard !utf8.isEmpty, utf8.count <= maxNameLength + 1 else { return nil }
        let body = utf8.last == UInt8(ascii: ".") ? utf8.dropLast() : utf8[...]
        guard !body.isEmpty, body.count <= maxNameLength else { return nil }
        var labelLength = 0
        var lastLabelAllDigits = true
        var hasUppercase = false
        for byte in body {
            if byte == UInt8(ascii: ".") {
                guard labelLength > 0 else { return nil }
                labelLength = 0
                lastLabelAllDigits = true
                continue
            }
            guard isLabelByte(byte) else { return nil }
            labelLength += 1
            guard labelLength <= maxLabelLength else { return nil }
            if byte < UInt8(ascii: "0") || byte > UInt8(ascii: "9") { lastLabelAllDigits = false }
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { hasUppercase = true }
        }
        guard labelLength > 0, !lastLabelAllDigits else { return nil }
        // Most names arrive lowercase already: then the name is its own canonical form.
        guard hasUppercase else { return host }
        return String(decoding: utf8.map(asciiLowercased), as: UTF8.self)
    }

    /// True when `host` is already a canonical host name that every check here and in
    /// `HostName.validate` would return unchanged: lowercase letters, digits, `-` and `_` in
    /// labels of 1 to 63 bytes that neither start nor end with `-`, at most 253 bytes, no
    /// trailing dot, and a last label that is not all digits (so it is no IPv4 literal either).
    ///
    /// Why: nearly every name a client sends is in this form, and one pass over its bytes then
    /// replaces the IP-literal parses, the IDNA and syntax checks and their allocations, which
    /// were a fifth of a cache hit. Anything else (uppercase, a trailing dot, non-ASCII) takes
    /// the full path; a test checks that both agree.
    public static func isCanonical(_ host: String) -> Bool {
        host.utf8.withContiguousStorageIfAvailable(isCanonical) ?? false
    }

    static func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maxNameLength else { return false }
        // Label by label; each byte is two range tests and two comparisons (the switch on ranges
        // with the label's state was a fifth of a cache hit's host check).
        var labelStart = 0
        while true {
            var end = labelStart
            var allDigits = true
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: ".") { break }
                let isDigit = byte &- UInt8(ascii: "0") < 10
                guard
                    isDigit || byte &- UInt8(ascii: "a") < 26 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                else { return false }
                allDigits = allDigits && isDigit
                end += 1
            }
            let length = end - labelStart
            guard length > 0, length <= maxLabelLength, bytes[labelStart] != UInt8(ascii: "-"),
                bytes[end - 1] != UInt8(ascii: "-")
            else { return false }
            // The last label: no trailing dot, and not all digits (an IPv4 literal's shape).
            if end == bytes.count { return !allDigits }
            labelStart = end + 1
        }
    }

    /// True when every byte of `host` is ASCII.
    public static func isASCII(_ host: String) -> Bool {
        host.utf8.allSatisfy { $0 < 0x80 }
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}
