import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The streamed listCookies and exportCookies answers: whatever the piece size, the bytes are
/// the one-shot answer's, and every call writes something.
struct CookieStreamsTests {
    static let now: Int64 = 1_767_225_600

    static func jar() -> CookieJar {
        let jar = CookieJar(rules: BasicDomainRules(), limits: CookieJarLimits(maxPerDomain: 50, maxTotal: 100))
        _ = jar.importNetscape(
            (0..<30).map { "d\($0 % 3).example\tFALSE\t/p\($0)\tTRUE\t0\tn\($0)\tv\"\\\($0)\n" }.joined()
                + "#HttpOnly_.example.org\tTRUE\t/\tFALSE\t1999999999\tsid\tabc\n", now: now)
        // A value holding a TAB: the export leaves it out and names it in leftOut.
        if let url = RequestURL("https://tab.example/"), let request = try? CookieRequest(url, for: jar) {
            _ = jar.setCookies(["tab=a\tb"], for: request, now: now)
        }
        return jar
    }

    static func pieces(budget: Int, _ writeNext: (inout JSONOutput, Int) -> Bool) -> [UInt8] {
        var out = JSONOutput()
        for _ in 0..<10_000 {
            let before = out.count
            let done = writeNext(&out, budget)
            #expect(out.count > before, "a piece wrote nothing")
            if done { return out.bytes }
        }
        Issue.record("never finished")
        return []
    }

    /// A piece of one byte used to write the list's opening again on each call (found by the
    /// export-stream fuzz target).
    @Test(arguments: [1, 7, 100, 4_096, 1 << 20])
    func piecesOfAnySizeWriteTheOneShotAnswer(budget: Int) throws {
        let jar = Self.jar()
        let cookies = try jar.list(now: Self.now)
        #expect(cookies.count == 32)
        var export = JSONOutput()
        let netscape = jar.exportNetscape(now: Self.now)
        ExportCookiesResult(data: netscape.text, leftOut: netscape.leftOut).write(to: &export)
        let exportStream = NetscapeExportStream(cookies)
        #expect(netscape.leftOut.map(\.name) == ["tab"])
        #expect(Self.pieces(budget: budget) { exportStream.writeNext(to: &$0, budget: $1) } == export.bytes)
        let records = cookies
        var list = JSONOutput()
        ListCookiesResult(cookies: records).write(to: &list)
        let listStream = ArrayResultStream(cookies: records)
        #expect(Self.pieces(budget: budget) { listStream.writeNext(to: &$0, budget: $1) } == list.bytes)
        #expect(listStream.heldBytes > 31 * 10 && exportStream.heldBytes > 31 * 10)
    }

    @Test func anEmptyJarStreamsAnEmptyAnswer() {
        let list = ArrayResultStream(cookies: [])
        #expect(Self.pieces(budget: 1) { list.writeNext(to: &$0, budget: $1) } == Array(#"{"cookies":[]}"#.utf8))
        let export = NetscapeExportStream([])
        let text = Self.pieces(budget: 1) { export.writeNext(to: &$0, budget: $1) }
        #expect(String(decoding: text, as: UTF8.self).hasPrefix(##"{"data":"# Netscape HTTP Cookie File\n"##))
    }
}
