import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

/// `CookieMatching` compares over contiguous bytes; these hold it against the RFC 6265bis
/// definitions written plainly over UTF-8 views, for seeded random domains and paths.
struct CookieMatchingTests {
    /// 5.1.3, as written.
    static func referenceDomainMatches(_ string: String, _ domain: String) -> Bool {
        if Array(string.utf8) == Array(domain.utf8) { return true }
        let host = Array(string.utf8)
        let suffix = Array(domain.utf8)
        guard !suffix.isEmpty, host.count > suffix.count, host.suffix(suffix.count).elementsEqual(suffix) else {
            return false
        }
        return host[host.count - suffix.count - 1] == UInt8(ascii: ".") && !IPLiteral.isIPLiteral(string)
    }

    /// 5.1.4, as written.
    static func referencePathMatches(_ request: String, _ cookie: String) -> Bool {
        let r = Array(request.utf8)
        let c = Array(cookie.utf8)
        if r == c { return true }
        guard r.starts(with: c) else { return false }
        return c.last == UInt8(ascii: "/") || r[c.count] == UInt8(ascii: "/")
    }

    @Test func domainAndPathMatchingAgreeWithTheDefinitions() {
        var generator = SeededGenerator(state: 0x636F_6F6B_6965)
        let labels = ["a", "b", "example", "com", "1", "2", "3", "4", "xn--bcher-kva", "\u{fc}", ""]
        let segments = ["", "a", "b", "app", "app/", "/", "%2F", "\u{e9}"]
        func pick<T>(_ list: [T]) -> T { list[Int(generator.next() % UInt64(list.count))] }
        for _ in 0..<20_000 {
            let host = (0..<(1 + Int(generator.next() % 4))).map { _ in pick(labels) }.joined(separator: ".")
            // A domain that is often a suffix of the host.
            var domain = (0..<(1 + Int(generator.next() % 3))).map { _ in pick(labels) }.joined(separator: ".")
            if generator.next() % 2 == 0 {
                let parts = host.split(separator: ".", omittingEmptySubsequences: false)
                domain = parts.suffix(Int(generator.next() % UInt64(parts.count + 1))).joined(separator: ".")
            }
            #expect(
                CookieMatching.domainMatches(host, domain: domain) == Self.referenceDomainMatches(host, domain),
                "\(host.debugDescription) vs \(domain.debugDescription)")
            let request = "/" + (0..<Int(generator.next() % 4)).map { _ in pick(segments) }.joined(separator: "/")
            var cookiePath = generator.next() % 3 == 0 ? "" : "/"
            cookiePath += (0..<Int(generator.next() % 3)).map { _ in pick(segments) }.joined(separator: "/")
            if generator.next() % 2 == 0 { cookiePath = String(request.prefix(Int(generator.next() % 8))) }
            #expect(
                CookieMatching.pathMatches(request, cookiePath: cookiePath)
                    == Self.referencePathMatches(request, cookiePath),
                "\(request.debugDescription) vs \(cookiePath.debugDescription)")
        }
    }
}
