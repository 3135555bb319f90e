import HTTPDNSProtocol

/// The matching rules of RFC 6265bis section 5.1.3 and 5.1.4, on octets (the RFC compares
/// octet strings; Swift's `==` on `String` would also equate canonically equivalent Unicode).
public enum CookieMatching {
    /// 5.1.3: `string` domain-matches `domain` when they are identical, or when `domain` is
    /// a suffix of `string` preceded by "." and `string` is a host name, not an IP address.
    public static func domainMatches(_ string: String, domain: String) -> Bool {
        domainMatches(string, domain: domain, stringIsIPLiteral: IPLiteral.isIPLiteral(string))
    }

    /// `domainMatches` when the caller already knows whether `string` is an IP literal.
    static func domainMatches(_ string: String, domain: String, stringIsIPLiteral: Bool) -> Bool {
        string.withUTF8Bytes(and: domain) { host, domain in
            domainMatches(host, domain: domain, hostIsIPLiteral: stringIsIPLiteral)
        }
    }

    /// `domainMatches` on octets (the retrieval loop has the request's host in place once).
    static func domainMatches(
        _ host: UnsafeBufferPointer<UInt8>, domain: UnsafeBufferPointer<UInt8>, hostIsIPLiteral: Bool
    ) -> Bool {
        if host.count == domain.count { return same(host, domain) }
        guard domain.count > 0, host.count > domain.count, !hostIsIPLiteral else { return false }
        let offset = host.count - domain.count
        guard host[offset - 1] == UInt8(ascii: ".") else { return false }
        for i in 0..<domain.count where host[offset + i] != domain[i] { return false }
        return true
    }

    /// 5.1.4: the default-path of a request path, or nil when it is longer than `maxOctets`; only
    /// that much is copied.
    static func defaultPath(_ uriPath: String, maxOctets: Int) -> String? {
        let utf8 = uriPath.utf8
        guard utf8.first == UInt8(ascii: "/"), let lastSlash = utf8.lastIndex(of: UInt8(ascii: "/")),
            lastSlash != utf8.startIndex
        else { return "/" }
        guard utf8.distance(from: utf8.startIndex, to: lastSlash) <= maxOctets else { return nil }
        return String(decoding: utf8[..<lastSlash], as: UTF8.self)
    }

    /// 5.1.4: `requestPath` path-matches `cookiePath`.
    public static func pathMatches(_ requestPath: String, cookiePath: String) -> Bool {
        requestPath.withUTF8Bytes(and: cookiePath) { pathMatches($0, cookiePath: $1) }
    }

    static func pathMatches(_ request: UnsafeBufferPointer<UInt8>, cookiePath cookie: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard request.count >= cookie.count else { return false }
        for i in 0..<cookie.count where request[i] != cookie[i] { return false }
        if request.count == cookie.count { return true }
        if cookie.last == UInt8(ascii: "/") { return true }
        return request[cookie.count] == UInt8(ascii: "/")
    }

    /// Octet equality.
    static func same(_ lhs: String, _ rhs: String) -> Bool {
        lhs.hasSameBytes(as: rhs)
    }

    static func same(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for i in 0..<lhs.count where lhs[i] != rhs[i] { return false }
        return true
    }

    /// ASCII case-insensitive prefix test on octets; `prefix` is written in lowercase.
    static func hasPrefixIgnoringASCIICase(_ string: String, _ prefix: StaticString) -> Bool {
        string.utf8.count >= prefix.utf8CodeUnitCount
            && string.withUTF8Bytes { startsIgnoringASCIICase($0, with: prefix) }
    }
}
