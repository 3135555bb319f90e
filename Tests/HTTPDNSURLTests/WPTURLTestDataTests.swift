import Foundation
import HTTPDNSIDNA
import HTTPDNSProtocol
import HTTPDNSURL
import Testing

/// The http, https, ws and wss cases of web-platform-tests' `urltestdata.json` (the WHATWG URL
/// Standard's own test data, in `Resources/` with its licence) through `HTTPURL` with libidn2:
/// every component of every case must match, except exactly the deliberate refusals below.
struct WPTURLTestDataTests {
    static let dataPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/urltestdata.json").path

    /// Cases the product refuses where the standard parses, each with its reason. A refusal is
    /// never another host: the URL is not served at all.
    static let deliberateRefusals: [String: String] = [
        "https://%e2%98%83": """
        U+2603 (snowman) is valid under UTS #46 but disallowed by IDNA2008, which libidn2 applies \
        (curl, which links the same libidn2, cannot reach this host either)
        """
    ]

    struct Case {
        var input: String
        var base: String?
        var expected: JSON
    }

    /// The cases whose scheme (the input's, or the base's for a relative input) is one of the four.
    static func cases() throws -> [Case] {
        let data = try #require(FileManager.default.contents(atPath: dataPath), "\(dataPath) is missing")
        let json = try JSONParser.parse(Array(replacingLoneSurrogates(String(decoding: data, as: UTF8.self)).utf8))
        let all = try #require(json.arrayValue)
        var cases: [Case] = []
        for entry in all {
            guard entry.objectValue != nil, let input = entry["input"]?.stringValue else { continue }
            let base = entry["base"]?.stringValue
            let scheme = schemeOf(input) ?? base.flatMap(schemeOf)
            guard let scheme, ["http", "https", "ws", "wss"].contains(scheme) else { continue }
            if let href = entry["href"]?.stringValue, let hrefScheme = schemeOf(href),
                !["http", "https", "ws", "wss"].contains(hrefScheme)
            {
                continue
            }
            cases.append(Case(input: input, base: base, expected: entry))
        }
        return cases
    }

    @Test("every http(s)/ws(s) case of urltestdata.json passes, except exactly the deliberate refusals")
    func urlTestData() throws {
        let cases = try Self.cases()
        #expect(cases.count > 400, "only \(cases.count) in-scope cases: the data file is not what it was")
        var refused: [String] = []
        var failures: [String] = []
        for testCase in cases {
            let base = testCase.base.flatMap { HTTPURL($0, toASCII: IDNA.urlDomainToASCII) }
            let url = HTTPURL(testCase.input, base: base, toASCII: IDNA.urlDomainToASCII)
            let label = "\(String(reflecting: testCase.input)) against \(testCase.base ?? "no base")"
            if testCase.expected["failure"]?.boolValue == true {
                if let url { failures.append("\(label): parsed as \(url), expected failure") }
                continue
            }
            guard let url else {
                refused.append(testCase.input)
                continue
            }
            for (field, actual) in Self.components(of: url) {
                let expected = testCase.expected[field]?.stringValue
                if let expected, expected != actual {
                    failures.append(
                        "\(label): \(field) \(String(reflecting: actual)), expected \(String(reflecting: expected))")
                }
            }
            // The serialization parses back to itself.
            if HTTPURL(url.description, toASCII: IDNA.urlDomainToASCII) != url {
                failures.append("\(label): \(url) does not parse back to itself")
            }
        }
        print("urltestdata.json: \(cases.count) http(s)/ws(s) cases, \(refused.count) refused on purpose")
        #expect(failures.isEmpty, "\(failures.count) failures:\n\(failures.joined(separator: "\n"))")
        #expect(Set(refused) == Set(Self.deliberateRefusals.keys), "refused: \(refused)")
    }

    /// The URL API's getters, as the data names them.
    static func components(of url: HTTPURL) -> [(String, String)] {
        let port = url.port.map { "\($0)" } ?? ""
        return [
            ("href", url.description),
            ("protocol", url.scheme.name + ":"),
            ("username", url.username),
            ("password", url.password),
            ("hostname", url.host.description),
            ("host", url.host.description + (port.isEmpty ? "" : ":" + port)),
            ("port", port),
            ("pathname", url.path),
            ("search", url.query.map { $0.isEmpty ? "" : "?" + $0 } ?? ""),
            ("hash", url.fragment.map { $0.isEmpty ? "" : "#" + $0 } ?? ""),
            ("origin", "\(url.scheme.name)://\(url.host)" + (port.isEmpty ? "" : ":" + port)),
        ]
    }

    /// The scheme a URL string starts with (after the leading controls and spaces, tabs and
    /// newlines the parser removes), lowercased; nil when it has none.
    static func schemeOf(_ text: String) -> String? {
        let cleaned = text.drop { $0.asciiValue.map { $0 <= 0x20 } ?? false }.filter {
            $0 != "\t" && $0 != "\n" && $0 != "\r"
        }
        guard let first = cleaned.first, first.isASCII, first.isLetter, let colon = cleaned.firstIndex(of: ":")
        else { return nil }
        let scheme = cleaned[..<colon]
        guard scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
            return nil
        }
        return scheme.lowercased()
    }

    /// The data holds JavaScript strings, some with lone surrogates; WebIDL's USVString (the
    /// URL parser's input) makes each U+FFFD. The JSON reader refuses them, so they are
    /// replaced in the escapes first.
    static func replacingLoneSurrogates(_ text: String) -> String {
        var output = ""
        var rest = Substring(text)
        func surrogate(_ text: Substring) -> UInt32? {
            guard text.hasPrefix("\\u"), text.count >= 6, let value = UInt32(text.dropFirst(2).prefix(4), radix: 16),
                (0xD800..<0xE000).contains(value)
            else { return nil }
            return value
        }
        while let index = rest.firstIndex(of: "\\") {
            output += rest[..<index]
            rest = rest[index...]
            if rest.hasPrefix("\\\\") {
                output += "\\\\"
                rest = rest.dropFirst(2)
                continue
            }
            guard let high = surrogate(rest) else {
                output += "\\"
                rest = rest.dropFirst()
                continue
            }
            if high < 0xDC00, let low = surrogate(rest.dropFirst(6)), low >= 0xDC00 {
                output += rest.prefix(12)
                rest = rest.dropFirst(12)
            } else {
                output += "\\uFFFD"
                rest = rest.dropFirst(6)
            }
        }
        return output + rest
    }
}
