import HTTPDNSProtocol

/// The matching rules of RFC 6265bis section 5.1.3 and 5.1.4, on octets (the RFC compares
/// octet strings; Swift's `==` on `String` would also equate canonically equivalent Unicode).
public enum CookieMatching {
    /// 5.1.3: `string` domain-matches `domain` when they are identical, or when `domain` is
    /// a suffix of `string` preceded by "." and `string` is a host name, not an IP address.
    public static func domainMatches(_ string: String, domain: String) -> Bool {
        domainMatches(string, domain: domain, stringIsIPLiteral: IPLiteral.isIPLiteral(string))
    }

    /// `domainMatches` when the caller already knows whether `string` is an IP literal (the
    /// retrieval loop asks once per request, not once per cookie).
    static func domainMatches(_ string: String, domain: String, stringIsIPLiteral: Bool) -> Bool {
        let hostCount = string.utf8.count
        let suffixCount = domain.utf8.count
        if hostCount == suffixCount { return string.hasSameBytes(as: domain) }
        guard suffixCount > 0, hostCount > suffixCount, !stringIsIPLiteral else { return false }
        // Over contiguous bytes: the generic reversed-view comparison showed in retrieval profiles.
        var host = string
        var suffix = domain
        return host.withUTF8 { host in
            suffix.withUTF8 { suffix in
                let offset = hostCount - suffixCount
                guard host[offset - 1] == UInt8(ascii: ".") else { return false }
                for i in 0..<suffixCount where host[offset + i] != suffix[i] { return false }
                return true
            }
        }
    }

    /// 5.1.4: the default-path of a request path.
    public static func defaultPath(_ uriPath: String) -> String {
        let bytes = Array(uriPath.utf8)
        guard bytes.first == UInt8(ascii: "/"), let lastSlash = bytes.lastIndex(of: UInt8(ascii: "/")), lastSlash > 0
        else { return "/" }
        return String(decoding: bytes[..<lastSlash], as: UTF8.self)
    }

    /// 5.1.4: `requestPath` path-matches `cookiePath`.
    public static func pathMatches(_ requestPath: String, cookiePath: String) -> Bool {
        guard requestPath.utf8.count >= cookiePath.utf8.count else { return false }
        // Over contiguous bytes, like `domainMatches`.
        var request = requestPath
        var cookie = cookiePath
        return request.withUTF8 { request in
            cookie.withUTF8 { cookie in
                for i in 0..<cookie.count where request[i] != cookie[i] { return false }
                if request.count == cookie.count { return true }
                if cookie.last == UInt8(ascii: "/") { return true }
                return request[cookie.count] == UInt8(ascii: "/")
            }
        }
    }

    /// Octet equality.
    static func same(_ lhs: String, _ rhs: String) -> Bool {
        lhs.hasSameBytes(as: rhs)
    }

    /// ASCII case-insensitive prefix test on octets.
    static func hasPrefixIgnoringASCIICase(_ string: String, _ prefix: String) -> Bool {
        var iterator = string.utf8.makeIterator()
        for expected in prefix.utf8 {
            guard let byte = iterator.next(), asciiLowercased(byte) == asciiLowercased(expected) else { return false }
        }
        return true
    }
}
