import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Random input into every parser: no trap, and never a Cookie header with a control
/// character (CR/LF would let a server inject request headers).
struct CookieFuzzTests {
    /// Bytes that matter to the parsers, plus arbitrary ones.
    static let interesting: [UInt8] =
        Array(";=,. \t\r\n\0:/[]%@?#\"-_".utf8) + Array("aAzZ09".utf8) + [0x7F, 0xC3, 0xBC, 0xFF]
    static let fragments = [
        "Domain=", "Path=/", "Secure", "HttpOnly", "SameSite=None", "Max-Age=", "Expires=", "__Host-", "__Secure-",
        "example.com", "192.0.2.1", "http://", "https://", "[::1]", "Sun, 06 Nov 1994 08:49:37 GMT", "\t", "\r\n",
    ]

    static func randomString(_ rng: inout SeededGenerator) -> String {
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 0...40, using: &rng) {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: bytes.append(UInt8.random(in: 0...255, using: &rng))
            case 1: bytes += Array(fragments.randomElement(using: &rng)!.utf8)
            default: bytes.append(interesting.randomElement(using: &rng)!)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func setCookieAndURLParsersNeverTrapOrLeakControls() throws {
        var rng = SeededGenerator(state: 0x6265_6269_7300_0001)
        let jar = CookieJar(rules: BasicDomainRules(), limits: CookieJarLimits(maxPerDomain: 20, maxTotal: 200))
        let hosts = ["http://example.com/a/b", "https://www.example.com/", "http://192.0.2.1/x", "https://[::1]/"]
        var now: Int64 = 1_800_000_000
        for round in 0..<4000 {
            let text = Self.randomString(&rng)
            _ = SetCookieParser.parse(text)
            _ = CookieDate.parse(text)
            if let url = RequestURL(text) {
                #expect(RequestURL(url.description) == url, "\(url)")
            }
            _ = RequestURL("http://" + text)
            now += Int64.random(in: 0...3, using: &rng)
            let url = try #require(RequestURL(hosts[round % hosts.count]))
            let request = try CookieRequest(url, for: jar)
            _ = jar.setCookies([text, "k\(round % 50)=" + text], for: request, now: now)
            let header = jar.cookieHeader(for: request, now: now).header
            #expect(!header.utf8.contains(where: SetCookieParser.isForbiddenControl))
        }
        #expect(jar.count <= 200)
    }

    @Test func netscapeImportNeverTraps() {
        var rng = SeededGenerator(state: 42)
        let jar = CookieJar(rules: BasicDomainRules())
        for _ in 0..<2000 {
            var line = (0..<7).map { _ in Self.randomString(&rng) }.joined(separator: "\t")
            if Bool.random(using: &rng) { line = "example.com\tFALSE\t/\tFALSE\t0\t" + line }
            _ = jar.importNetscape(line + "\n" + Self.randomString(&rng), now: 1_800_000_000)
        }
        let header =
            (try? jar.cookieHeader(for: CookieRequest(RequestURL("http://example.com/")!, for: jar), now: 1_800_000_000)
                .header) ?? ""
        #expect(!header.utf8.contains(where: SetCookieParser.isForbiddenControl))
    }
}
