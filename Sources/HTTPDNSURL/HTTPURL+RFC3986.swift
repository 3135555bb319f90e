extension HTTPURL {
    /// Whether a client that reads `text` as RFC 3986 does (curl, and most HTTP libraries) connects
    /// to the host and port this URL names, `text` being what this URL was parsed from.
    ///
    /// The two readings agree when the text is written plainly: `scheme://` and no third slash,
    /// then an authority (up to the first `/`, `?` or `#`) holding no backslash (a path separator
    /// here, a host byte there), no control, space or DEL (removed or refused here), no
    /// percent-escape in the host (decoded here), at most one `@` (RFC 3986's userinfo cannot hold another; curl splits at
    /// the first, this parser at the last), and an IPv4 host in dotted-decimal form only (the
    /// other number forms are read differently by different resolvers). Anything else is
    /// ambiguous: which site it belongs to depends on who reads it, so it is refused rather
    /// than guessed.
    public func agreesWithRFC3986(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { agreesWithRFC3986(utf8: $0) }
    }

    /// `agreesWithRFC3986(_:)` on UTF-8 bytes.
    public func agreesWithRFC3986(utf8 b: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = b.count
        var colon = 0
        while colon < n && b[colon] != UInt8(ascii: ":") { colon += 1 }
        guard colon + 2 < n, URLParser.scheme(UnsafeBufferPointer(rebasing: b[0..<colon])) == scheme,
            b[colon + 1] == UInt8(ascii: "/"), b[colon + 2] == UInt8(ascii: "/")
        else { return false }
        let start = colon + 3
        // A third slash: an empty authority to RFC 3986, skipped by the URL Standard.
        guard start < n, b[start] != UInt8(ascii: "/"), b[start] != UInt8(ascii: "\\") else { return false }
        var end = start
        var atSigns = 0
        var hostStart = start
        while end < n {
            let byte = b[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "\\") { return false }
            if byte == UInt8(ascii: "@") {
                atSigns += 1
                hostStart = end + 1
            }
            end += 1
        }
        guard atSigns <= 1 else { return false }
        // Percent-escapes in the userinfo are read alike; in the host, only this parser decodes them.
        for index in hostStart..<end where b[index] == UInt8(ascii: "%") { return false }
        if case .ipv4(let address) = host {
            // The host as written must be the dotted quad this parser serializes.
            var hostEnd = hostStart
            while hostEnd < end && b[hostEnd] != UInt8(ascii: ":") { hostEnd += 1 }
            return URLParser.dottedQuad(UnsafeBufferPointer(rebasing: b[hostStart..<hostEnd])) == address
        }
        return true
    }
}
