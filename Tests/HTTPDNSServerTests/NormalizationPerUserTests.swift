import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The IP -> host memory that files cookies from IP-literal URLs and answers `reverse` is per
/// uid: another user's resolves never steer where root's cookies go. The test runs as root; the
/// other user is uid 65534 through `setpriv ... socat`.
@Suite(.serialized, .enabled(if: OtherUser.available, OtherUser.skipReason))
struct NormalizationPerUserTests {
    /// Two sites behind one CDN address, and a name of root's own.
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "bank.example.com": (["203.0.113.10"], [], 300),
        "evil.example.com": (["203.0.113.10"], [], 300),
        "a.example.com": (["203.0.113.20"], ["2001:db8::20"], 120),
        "short.example.com": (["203.0.113.30"], [], 1),
    ]

    static func start(_ upstream: FakeHTTPServer, directory: TemporaryDirectory = TemporaryDirectory()) throws -> (
        DaemonHarness, LineClient
    ) {
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nTimeout=1s\nStatic=intranet.example 10.0.0.5\n",
            directory: directory)
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        return (daemon, client)
    }

    static func result(_ client: LineClient, _ method: String, _ params: JSON, id: Int) throws -> JSON {
        let response = try #require(try client.call(method, params, id: id))
        guard let result = response["result"] else {
            throw HarnessError("\(method) answered \(response.encodedString)")
        }
        return result
    }

    /// uid 65534 resolving another site on root's bank's CDN address must not make root's next
    /// session cookie from that address go to the other site.
    @Test func anotherUserCannotSteerWhereRootsCookiesGo() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let (daemon, client) = try Self.start(upstream)
        _ = try Self.result(client, "resolve", ["host": "bank.example.com", "family": "ipv4"], id: 1)
        let theirs = try OtherUser.call(daemon, "resolve", ["host": "evil.example.com", "family": "ipv4"])
        #expect(theirs["result"]?["ipv4"] == ["203.0.113.10"], "\(theirs.encodedString)")

        let stored = try Self.result(
            client, "handleSetCookie",
            ["url": "https://203.0.113.10/login", "setCookie": ["sid=secret; Path=/; Secure; HttpOnly"]], id: 2)
        #expect(stored["host"] == "bank.example.com", "\(stored.encodedString)")
        #expect(try Self.result(client, "getCookieHeader", ["url": "https://evil.example.com/"], id: 3)["header"] == "")
        #expect(
            try Self.result(client, "getCookieHeader", ["url": "https://bank.example.com/"], id: 4)["header"]
                == "sid=secret")
        #expect(
            try Self.result(client, "getCookieHeader", ["url": "https://203.0.113.10/"], id: 5)["header"]
                == "sid=secret")

        // Each uid's reverse lookup names its own resolve only.
        #expect(try Self.result(client, "reverse", ["address": "203.0.113.10"], id: 6)["hosts"] == ["bank.example.com"])
        let otherReverse = try OtherUser.call(daemon, "reverse", ["address": "203.0.113.10"])
        #expect(otherReverse["result"]?["hosts"] == ["evil.example.com"], "\(otherReverse.encodedString)")
    }

    @Test func reverseAnswersFromTheCallersOwnMemory() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let (daemon, client) = try Self.start(upstream)
        _ = try Self.result(client, "resolve", ["host": "a.example.com"], id: 1)

        let v4 = try Self.result(client, "reverse", ["address": "203.0.113.20"], id: 2)
        #expect(v4["address"] == "203.0.113.20")
        #expect(v4["hosts"] == ["a.example.com"])
        let ttl = try #require(v4["ttl"]?.numberValue?.int64Value)
        #expect(ttl > 100 && ttl <= 120, "\(v4.encodedString)")
        let v6 = try Self.result(client, "reverse", ["address": "2001:DB8:0::20"], id: 3)
        #expect(v6["address"] == "2001:db8::20" && v6["hosts"] == ["a.example.com"], "\(v6.encodedString)")
        // An IPv4-mapped IPv6 address reaches the same IPv4 host: it finds the IPv4 entry.
        let mapped = try Self.result(client, "reverse", ["address": "::ffff:203.0.113.20"], id: 4)
        #expect(mapped["address"] == "::ffff:203.0.113.20" && mapped["hosts"] == ["a.example.com"])

        let unknown = try #require(try client.call("reverse", ["address": "198.51.100.99"], id: 5))
        #expect(unknown["error"]?["code"] == .int(-32001), "\(unknown.encodedString)")
        #expect(unknown["error"]?["data"]?["name"] == "HostNotFound")
        let junk = try #require(try client.call("reverse", ["address": "a.example.com"], id: 6))
        #expect(junk["error"]?["code"] == .int(-32602), "\(junk.encodedString)")
        #expect(junk["error"]?["data"]?["field"] == "address")
        let notTheirs = try OtherUser.call(daemon, "reverse", ["address": "203.0.113.20"])
        #expect(notTheirs["error"]?["code"] == .int(-32001), "\(notTheirs.encodedString)")

        // Static= answers handed out to this uid count too.
        _ = try Self.result(client, "resolve", ["host": "intranet.example"], id: 7)
        #expect(try Self.result(client, "reverse", ["address": "10.0.0.5"], id: 8)["hosts"] == ["intranet.example"])

        // Past the answer's TTL the name is still remembered, with ttl 0. The daemon's real clock runs
        // out the 1 s TTL (the behaviour under test), polled with a generous bound.
        _ = try Self.result(client, "resolve", ["host": "short.example.com", "family": "ipv4"], id: 9)
        var retained: JSON = .null
        var id = 10
        #expect(
            try eventually(30, every: 50) {
                id += 1
                retained = try Self.result(client, "reverse", ["address": "203.0.113.30"], id: id)
                return retained["ttl"] == 0
            })
        #expect(retained["hosts"] == ["short.example.com"], "\(retained.encodedString)")
    }

    /// A prefetched answer was handed out to nobody: it fills the cache but no uid's memory, until
    /// a uid resolves the name itself (a cache hit then counts for that uid only).
    @Test func prefetchedAnswersFeedNobodysMemory() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nPrefetch=bank.example.com\n")
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        var id = 0
        #expect(
            try eventually(10) {
                id += 1
                let status = try Self.result(client, "status", [:], id: id)
                return status["cache"]?["entries"]?.numberValue?.int64Value ?? 0 >= 2
            })
        let unknown = try #require(try client.call("reverse", ["address": "203.0.113.10"], id: 1_000))
        #expect(unknown["error"]?["code"] == .int(-32001), "\(unknown.encodedString)")
        let stored = try Self.result(
            client, "handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["k=v"]], id: 1_001)
        #expect(stored["host"] == "203.0.113.10", "\(stored.encodedString)")

        let theirs = try OtherUser.call(daemon, "resolve", ["host": "bank.example.com", "family": "ipv4"])
        #expect(theirs["result"]?["source"] == "cache", "\(theirs.encodedString)")
        let theirReverse = try OtherUser.call(daemon, "reverse", ["address": "203.0.113.10"])
        #expect(theirReverse["result"]?["hosts"] == ["bank.example.com"], "\(theirReverse.encodedString)")
        let stillUnknown = try #require(try client.call("reverse", ["address": "203.0.113.10"], id: 1_002))
        #expect(stillUnknown["error"]?["code"] == .int(-32001), "\(stillUnknown.encodedString)")
    }

    /// Each uid's memory comes back after a restart, its own and nobody else's.
    @Test func theMemorySurvivesARestartPerUser() throws {
        let directory = TemporaryDirectory()
        var upstream: FakeHTTPServer? = try FakeHTTPServer.alibaba(answers: Self.answers)
        do {
            let (daemon, client) = try Self.start(upstream!, directory: directory)
            _ = try Self.result(client, "resolve", ["host": "bank.example.com"], id: 1)
            _ = try OtherUser.call(daemon, "resolve", ["host": "evil.example.com"])
            daemon.stop()
        }
        let url = upstream!.alibabaURL()
        upstream?.stop()
        upstream = nil
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(url)\nTimeout=1s\n", directory: directory)
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        #expect(try Self.result(client, "reverse", ["address": "203.0.113.10"], id: 1)["hosts"] == ["bank.example.com"])
        let theirs = try OtherUser.call(daemon, "reverse", ["address": "203.0.113.10"])
        #expect(theirs["result"]?["hosts"] == ["evil.example.com"], "\(theirs.encodedString)")
        let stored = try Self.result(
            client, "handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["k=v"]], id: 2)
        #expect(stored["host"] == "bank.example.com")
    }

    /// `forget` clears the caller's own memory of an address and nobody else's: root's IP URL no
    /// longer files cookies under the name, another user's memory of the address and the cache stay.
    @Test func forgetClearsOnlyTheCallersMemory() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let (daemon, client) = try Self.start(upstream)
        _ = try Self.result(client, "resolve", ["host": "bank.example.com", "family": "ipv4"], id: 1)
        _ = try Self.result(client, "resolve", ["host": "a.example.com"], id: 2)
        _ = try OtherUser.call(daemon, "resolve", ["host": "bank.example.com", "family": "ipv4"])

        // Before: each name with its own TTL and retention end (TTL plus a day).
        let before = try Self.result(client, "reverse", ["address": "203.0.113.10"], id: 3)
        let name = try #require(before["names"]?.arrayValue?.first, "\(before.encodedString)")
        #expect(name["host"] == "bank.example.com")
        let ttl = try #require(name["ttl"]?.numberValue?.int64Value)
        let remembered = try #require(name["rememberedFor"]?.numberValue?.int64Value)
        #expect(ttl > 250 && ttl <= 300 && remembered == ttl + 86_400, "\(before.encodedString)")

        #expect(try Self.result(client, "forget", ["address": "203.0.113.10"], id: 4)["forgotten"] == 1)
        #expect(try Self.result(client, "forget", ["address": "203.0.113.10"], id: 5)["forgotten"] == 0)
        let gone = try #require(try client.call("reverse", ["address": "203.0.113.10"], id: 6))
        #expect(gone["error"]?["code"] == -32001, "\(gone.encodedString)")
        let stored = try Self.result(
            client, "handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["k=v"]], id: 7)
        #expect(stored["host"] == "203.0.113.10", "\(stored.encodedString)")
        // Another user's memory of the address, and root's other addresses, stay.
        let theirs = try OtherUser.call(daemon, "reverse", ["address": "203.0.113.10"])
        #expect(theirs["result"]?["hosts"] == ["bank.example.com"], "\(theirs.encodedString)")
        #expect(try Self.result(client, "reverse", ["address": "2001:db8::20"], id: 8)["hosts"] == ["a.example.com"])

        // all: everything root remembers (a.example.com's two addresses), nothing of the other user's.
        #expect(try Self.result(client, "forget", ["all": true], id: 9)["forgotten"] == 2)
        let none = try #require(try client.call("reverse", ["address": "203.0.113.20"], id: 10))
        #expect(none["error"]?["code"] == -32001, "\(none.encodedString)")
        #expect(try OtherUser.call(daemon, "reverse", ["address": "203.0.113.10"])["result"] != nil)
        // The cache is untouched: the names are still answered from it.
        #expect(try Self.result(client, "resolve", ["host": "a.example.com"], id: 11)["source"] == "cache")

        for (params, field) in [
            (JSON.object([:]), "address"), (["address": "203.0.113.10", "all": true], "all"),
            (["address": "bank.example.com"], "address"),
        ] as [(JSON, String)] {
            let refused = try #require(try client.call("forget", params, id: 12))
            #expect(refused["error"]?["code"] == -32602, "\(refused.encodedString)")
            #expect(refused["error"]?["data"]?["field"] == .string(field), "\(refused.encodedString)")
        }
    }
}
