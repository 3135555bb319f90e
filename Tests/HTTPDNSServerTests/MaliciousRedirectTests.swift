import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// A web server that plants cookies for another site: app.example.test (the attacker, 127.0.0.3)
/// redirects to a URL whose host is login.example.test (the bank) to the URL Standard and
/// app.example.test to curl's RFC 3986 reading, then answers with `Set-Cookie: sid=ATTACKER-FIXED`.
/// Neither `httpdnsctl curl -L` nor the README's libcurl program may follow it, and nothing of the
/// attacker's may be filed under the bank: the victim's jar sends the bank only its own cookie.
@Suite(.serialized, .enabled(if: TestPKI.toolsPresent && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
struct MaliciousRedirectTests {
    /// Where the attacker's server plants its cookie (its own /redirect answers with it).
    static let plantingPath = "/redirect?status=200&to=%2F&cookie=sid%3DATTACKER-FIXED"

    static func isPlanting(_ request: JSON) -> Bool {
        request["path"]?.stringValue?.hasPrefix("/redirect?status=200") == true
    }

    /// The Location shapes, each reaching the attacker under curl and the bank under the Standard.
    static func locations(_ fixture: IPDirectFixture) -> [String] {
        let port = fixture.ports[IPDirectFixture.app]!.http
        let plant = plantingPath
        return [
            #"http://login.example.test\@app.example.test:\#(port)\#(plant)"#,
            #"//login.example.test\@app.example.test:\#(port)\#(plant)"#,
            #"http://login.example.test\@app.example.test:\#(port)\#(plant)#x"#,
        ]
    }

    /// The victim's session at the bank, stored as a login would store it.
    static func logIntoTheBank(_ fixture: IPDirectFixture) throws -> String {
        let bank = fixture.url(IPDirectFixture.login, "http", "/")
        let client = try fixture.daemon.connectReady()
        let stored = try #require(
            try client.call("handleSetCookie", ["url": .string(bank), "setCookie": ["bank_sid=victim; Path=/"]], id: 1))
        #expect(stored["result"]?["host"] == .string(IPDirectFixture.login), "\(stored)")
        return bank
    }

    /// What the victim's jar sends the bank, and every cookie it holds.
    static func jar(_ fixture: IPDirectFixture, bank: String) throws -> (header: String?, all: String) {
        let client = try fixture.daemon.connectReady()
        let header = try client.call("getCookieHeader", ["url": .string(bank)], id: 2)?["result"]?["header"]?
            .stringValue
        let list = try client.call("listCookies", [:], id: 3)?.encodedString ?? ""
        return (header, list)
    }

    /// Starts `client` at the attacker's server redirecting to each shape in turn; `refused`
    /// checks how the client stopped. The bank's cookie stays the only one it gets, and the
    /// attacker's planting request never arrives.
    static func attack(
        _ fixture: IPDirectFixture, _ client: (String) throws -> CommandResult,
        refused: (CommandResult, String) -> Void
    ) throws {
        let bank = try logIntoTheBank(fixture)
        for location in locations(fixture) {
            let start = fixture.url(
                IPDirectFixture.app, "http", "/redirect?status=302&to=\(IPDirectFixture.query(location))")
            refused(try client(start), location)
            let held = try jar(fixture, bank: bank)
            #expect(held.header == "bank_sid=victim", "\(location): \(held.all)")
            #expect(!held.all.contains("ATTACKER-FIXED"), "\(location): \(held.all)")
        }
        #expect(!fixture.requests.contains(where: isPlanting), "\(fixture.requests)")
    }

    @Test func httpdnsctlCurlFollowsNoRedirectThatHidesTheHost() throws {
        let fixture = try IPDirectFixture()
        try Self.attack(fixture, { try fixture.ctl(["-sS", "-L", $0]) }) { result, location in
            // curl's "URL malformed" code, with a message naming the refused redirect.
            #expect(result.status == 3, "\(location): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("ambiguous"), "\(location): \(result.stderr)")
        }
    }

    @Test func theReadmeLibcurlExampleFollowsNoRedirectThatHidesTheHost() throws {
        let fixture = try IPDirectFixture()
        let program = try fixture.buildReadmeExample()
        let environment = ["HTTPDNSD_SOCKET": fixture.socketPath, "CURL_CA_BUNDLE": fixture.caFile]
        try Self.attack(fixture, { try fixture.inNamespace(program, [$0], environment: environment) }) {
            run, location in
            #expect(run.status != 0, "\(location): \(run.stdout)")
            #expect(run.stderr.contains("refused (-\(ENOTUNIQ))"), "\(location): \(run.stderr)")
        }
    }

    /// The same server, redirecting plainly to itself: the cookie is the attacker's own, filed
    /// under the attacker's host, and the bank still gets only its own.
    @Test func aPlainRedirectIsFollowedAndFilesCookiesUnderItsOwnHost() throws {
        let fixture = try IPDirectFixture()
        let bank = try Self.logIntoTheBank(fixture)
        let port = fixture.ports[IPDirectFixture.app]!.http
        let location = "http://login.example.test@app.example.test:\(port)\(Self.plantingPath)"
        let start = fixture.url(
            IPDirectFixture.app, "http", "/redirect?status=302&to=\(IPDirectFixture.query(location))")
        let result = try fixture.ctl(["-sS", "-L", start])
        #expect(result.status == 0, "\(result.stderr)")
        let jar = try Self.jar(fixture, bank: bank)
        #expect(jar.header == "bank_sid=victim", "\(jar.all)")
        let client = try fixture.daemon.connectReady()
        let attacker = fixture.url(IPDirectFixture.app, "http", "/")
        let header = try client.call("getCookieHeader", ["url": .string(attacker)], id: 4)?["result"]?["header"]
        #expect(header == "sid=ATTACKER-FIXED")
    }
}
