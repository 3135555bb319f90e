import Foundation
import HTTPDNSCore
import HTTPDNSPSL
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Runs the http-state corpus in `Tests/conformance` against the jar in-process, as
/// `Tests/conformance/run_corpus.py` runs it against the daemon: for each case a fresh jar,
/// `setCookies` for every step's `setCookieUrl`/`setCookie`, then `cookieHeader` for
/// `requestUrl`, compared byte for byte with `expectedRfc6265bis` when the case has it, else
/// `expected`. Exactly the cases of `known-failures.txt` may fail.
struct CookieConformanceTests {
    /// `Tests/conformance`, found from this source file.
    static let corpusDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("conformance")

    /// The clock the corpus was prepared against (2026-11-29T00:00:00Z): fixed, so that the
    /// cases with hard-coded 2027 dates and the 6-second Max-Age case do not depend on when
    /// the test runs.
    static let now: Int64 = 1_795_910_400

    @Test("http-state corpus, rfc6265bis profile: exactly the known failures fail")
    func corpus() throws {
        let corpusPath = Self.corpusDirectory.appendingPathComponent("http-state.json").path
        let data = try #require(
            FileManager.default.contents(atPath: corpusPath), "the corpus \(corpusPath) is missing or unreadable")
        let json = try JSONParser.parse([UInt8](data), maxDepth: 16)
        let cases = try #require(json.arrayValue, "the corpus is not a JSON array")
        #expect(cases.count == 222)
        let known = try Self.knownFailures()

        let rules = try PublicSuffixRules()
        var failures: [String: String] = [:]
        for testCase in cases {
            let id = try #require(testCase["id"]?.stringValue)
            let expected = testCase["expectedRfc6265bis"]?.stringValue ?? testCase["expected"]?.stringValue
            let actual = try run(testCase, rules: rules)
            if actual != expected {
                failures[id] = "expected \(String(reflecting: expected)), got \(String(reflecting: actual))"
            }
        }
        print(
            "http-state corpus (rfc6265bis profile) in-process: \(cases.count - failures.count) of \(cases.count) pass")
        for (id, failure) in failures.sorted(by: { $0.key < $1.key }) {
            print("  not passing: \(id): \(failure) (\(known[id] ?? "NOT EXPECTED"))")
        }
        #expect(
            Set(failures.keys) == Set(known.keys),
            "unexpected: \(failures.keys.filter { known[$0] == nil }.sorted()); now passing: \(known.keys.filter { failures[$0] == nil }.sorted())"
        )
    }

    /// `known-failures.txt`: one `ID reason` per line, `#` comments.
    static func knownFailures() throws -> [String: String] {
        let path = corpusDirectory.appendingPathComponent("known-failures.txt").path
        let data = try #require(FileManager.default.contents(atPath: path), "\(path) is missing or unreadable")
        var known: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            let parts = trimmed.split(separator: " ", maxSplits: 1)
            known[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return known
    }

    private func run(_ testCase: JSON, rules: PublicSuffixRules) throws -> String? {
        let jar = CookieJar(rules: rules)
        for step in testCase["steps"]?.arrayValue ?? [] {
            let url = try #require(step["setCookieUrl"]?.stringValue.flatMap { RequestURL($0) })
            let headers = (step["setCookie"]?.arrayValue ?? []).compactMap(\.stringValue)
            _ = jar.setCookies(headers, for: try CookieRequest(url, for: jar), now: Self.now)
        }
        let requestURL = try #require(testCase["requestUrl"]?.stringValue.flatMap { RequestURL($0) })
        return jar.cookieHeader(for: try CookieRequest(requestURL, for: jar), now: Self.now).header
    }
}
