import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// No cookie text is changed on its way: every Unicode whitespace and control character at the
/// edges of a name or value is kept or refused exactly as RFC 6265bis's parsing algorithm says
/// (section 5.6: only CTLs other than HTAB refuse a cookie, and only SP and HTAB are trimmed), and
/// what is kept comes back unchanged from the jar, its header and a cookies.txt round trip.
struct CookieTextEdgeTests {
    /// Unicode's White_Space characters, every C0 and C1 control, DEL, and the invisible format
    /// characters that trimming routines sometimes take for spaces.
    static let scalars: [Unicode.Scalar] = {
        var values = Array(0x00...0x20) + [0x7F] + Array(0x80...0xA0)
        values += [0x1680, 0x180E] + Array(0x2000...0x200D) + [0x2028, 0x2029, 0x202F, 0x205F, 0x2060, 0x3000, 0xFEFF]
        return values.map { Unicode.Scalar(UInt32($0))! }
    }()

    enum Place: CaseIterable {
        case beforeName, afterName, beforeValue, afterValue, insideValue
    }

    /// `name=value` with `scalar` at `place`.
    static func setCookie(_ scalar: Unicode.Scalar, at place: Place) -> String {
        let c = String(Character(scalar))
        switch place {
        case .beforeName: return c + "n=v"
        case .afterName: return "n" + c + "=v"
        case .beforeValue: return "n=" + c + "v"
        case .afterValue: return "n=v" + c
        case .insideValue: return "n=v" + c + "w"
        }
    }

    /// RFC 6265bis 5.6 steps 1-4 for a string without ";", written from the RFC over bytes: nil when
    /// it is ignored, else the name and value.
    static func reference(_ text: String) -> (name: [UInt8], value: [UInt8])? {
        let bytes = Array(text.utf8)
        // Step 1: a CTL other than HTAB.
        if bytes.contains(where: { $0 <= 0x08 || (0x0A...0x1F).contains($0) || $0 == 0x7F }) { return nil }
        // Steps 2-3.
        var name: [UInt8] = []
        var value = bytes
        if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
            name = Array(bytes[..<equals])
            value = Array(bytes[(equals + 1)...])
        }
        // Step 4: only SP and HTAB are whitespace here.
        func trim(_ part: [UInt8]) -> [UInt8] {
            let isWSP = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
            return Array(part.drop(while: isWSP).reversed().drop(while: isWSP).reversed())
        }
        return (trim(name), trim(value))
    }

    @Test func theParserFollowsTheRFCAtEveryEdge() {
        for scalar in Self.scalars {
            for place in Place.allCases {
                let text = Self.setCookie(scalar, at: place)
                let label = "U+\(String(scalar.value, radix: 16, uppercase: true)) \(place)"
                switch (SetCookieParser.parse(text), Self.reference(text)) {
                case (.success(let parsed), let expected?):
                    #expect(Array(parsed.name.utf8) == expected.name, "\(label): name")
                    #expect(Array(parsed.value.utf8) == expected.value, "\(label): value")
                case (.failure(let reason), nil):
                    #expect(reason == .syntax, "\(label)")
                case (let parsed, let expected):
                    Issue.record("\(label): parsed \(parsed), the RFC says \(String(describing: expected))")
                }
            }
        }
    }

    /// What the parser keeps, the jar stores, sends and exports byte for byte; a cookies.txt round
    /// trip brings back the same name and value.
    @Test func theJarChangesNoNameOrValue() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 10_000, maxTotal: 10_000))
        var expected: [String: (name: [UInt8], value: [UInt8])] = [:]
        var index = 0
        for scalar in Self.scalars {
            for place in Place.allCases {
                let text = Self.setCookie(scalar, at: place)
                guard let parsed = Self.reference(text) else { continue }
                // A path of its own per cookie, so that none replaces another.
                index += 1
                let path = "/c\(index)"
                let outcome = try h.set(text + "; Path=" + path, url: "http://www.example.com/")
                if parsed.name.isEmpty && parsed.value.isEmpty {
                    #expect(outcome.reasons == [.syntax])
                    continue
                }
                #expect(outcome.stored == 1, "\(text.unicodeScalars.map(\.value))")
                expected[path] = parsed
                let header = try h.header("http://www.example.com" + path)
                let pair = parsed.name.isEmpty ? parsed.value : parsed.name + [UInt8(ascii: "=")] + parsed.value
                #expect(Array(header.utf8) == pair, "\(text.unicodeScalars.map(\.value))")
            }
        }
        let stored = try h.jar.list(now: JarHarness.now)
        #expect(stored.count == expected.count)
        for cookie in stored {
            let want = try #require(expected[cookie.path])
            #expect(Array(cookie.name.utf8) == want.name && Array(cookie.value.utf8) == want.value, "\(cookie.path)")
        }

        let export = h.jar.exportNetscape(now: JarHarness.now)
        let copy = JarHarness(limits: CookieJarLimits(maxPerDomain: 10_000, maxTotal: 10_000))
        _ = copy.jar.importNetscape(export.text, now: JarHarness.now)
        let leftOut = Set(export.leftOut.map(\.path))
        for cookie in try copy.jar.list(now: JarHarness.now) {
            let want = try #require(expected[cookie.path])
            #expect(Array(cookie.name.utf8) == want.name && Array(cookie.value.utf8) == want.value, "\(cookie.path)")
        }
        #expect(try copy.jar.list(now: JarHarness.now).count == expected.count - leftOut.count)
        // Only the cookies holding a TAB are left out.
        for path in leftOut {
            let want = try #require(expected[path])
            #expect(want.name.contains(0x09) || want.value.contains(0x09), "\(path)")
        }
    }

    /// U+0085 (NEXT LINE) is whitespace to Swift's and Foundation's trimming, not to the RFC: a
    /// leading or trailing one stays in a name and a value.
    @Test func nextLineStaysAtTheEdges() throws {
        let h = JarHarness()
        try h.set("\u{85}n\u{85}=\u{85}v\u{85}", url: "http://www.example.com/")
        let cookie = try h.only()
        #expect(cookie.name.unicodeScalars.map(\.value) == [0x85, 0x6E, 0x85])
        #expect(cookie.value.unicodeScalars.map(\.value) == [0x85, 0x76, 0x85])
    }
}
