import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// libcurl, hiredis and libsodium are loaded on first use (dlopen), not at start: a daemon that
/// only keeps cookies, or queries plain-HTTP upstreams, never maps them, and one that cannot load
/// one still keeps cookies.
@Suite(.serialized)
struct OptionalLibrariesTests {
    static let zone = FakeDNSZone(records: [FakeDNSRecord("a.example.com", ttl: 60, .a("203.0.113.70"))])
    /// What /proc/PID/maps shows of each library once it is mapped.
    static let optional = ["libcurl.so", "libhiredis.so", "libsodium.so"]

    /// An https upstream needs libcurl (TLS): here a plain-HTTP fake on that port, so the handshake
    /// fails, but only after libcurl was loaded to try it.
    @Test func cookieLookupsMapNoOptionalLibraryAndAnHTTPSUpstreamMapsLibcurl() throws {
        let upstream = try FakeHTTPServer.dohJSON(zone: Self.zone)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh-json https://127.0.0.1:\(upstream.port)/resolve\nTimeout=1s\n")
        let client = try daemon.connectReady()
        try cookieRoundTrip(client)
        let before = try mappedFiles(daemon.process.pid)
        #expect(before.contains { $0.contains("libpsl.so") }, "the maps were read: \(before)")
        for library in Self.optional {
            #expect(!before.contains { $0.contains(library) }, "\(library) mapped before any use")
        }

        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"], id: 3))
        #expect(answer["error"] != nil, "TLS to a plain-HTTP fake answered: \(answer.encodedString)")
        #expect(upstream.acceptedConnections >= 1)
        let after = try mappedFiles(daemon.process.pid)
        #expect(after.contains { $0.contains("libcurl.so.4") }, "libcurl not mapped after an HTTPS upstream's query")
        #expect(!after.contains { $0.contains("libhiredis.so") || $0.contains("libsodium.so") })
    }

    /// Plain http:// upstreams are queried by the daemon itself: answers come from the upstream and
    /// libcurl (and its TLS stack) is never mapped.
    @Test func aPlainHTTPUpstreamAnswersWithoutMappingLibcurl() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "a.example.com": (v4: ["203.0.113.71"], v6: [], ttl: 60),
            "b.example.com": (v4: ["203.0.113.72"], v6: [], ttl: 60),
        ])
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()
        for (id, (host, address)) in [("a.example.com", "203.0.113.71"), ("b.example.com", "203.0.113.72")]
            .enumerated()
        {
            let answer = try #require(
                try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: id + 1))
            #expect(answer["result"]?["ipv4"] == [.string(address)], "\(answer.encodedString)\n\(daemon.log)")
            #expect(answer["result"]?["upstream"] == "alibaba")
        }
        #expect(upstream.requests.contains { $0.path == "/100000/d" && $0.queryValue("host") == "b.example.com" })
        let mapped = try mappedFiles(daemon.process.pid)
        #expect(mapped.contains { $0.contains("libpsl.so") }, "the maps were read: \(mapped)")
        for library in Self.optional {
            #expect(!mapped.contains { $0.contains(library) }, "\(library) mapped by plain-HTTP upstream queries")
        }
    }

    @Test func aLibcurlThatCannotBeLoadedFailsTheUpstreamWithTheReasonAndCookiesStillWork() throws {
        let upstream = try FakeHTTPServer.dohJSON(zone: Self.zone)
        let libraries = TemporaryDirectory()
        // Found before the system's copy (LD_LIBRARY_PATH comes first), and not an ELF file.
        try "not a library".write(toFile: libraries.file("libcurl.so.4"), atomically: true, encoding: .utf8)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh-json https://127.0.0.1:\(upstream.port)/resolve\nTimeout=2s\n",
            environment: ["LD_LIBRARY_PATH": libraries.path])
        let client = try daemon.connectReady()

        let failed = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(failed["error"] != nil, "\(failed.encodedString)")
        #expect(upstream.acceptedConnections == 0)
        let status = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        let lastError = status.first?["lastError"]?.stringValue ?? ""
        #expect(lastError.contains("libcurl.so.4"), "\(status)")
        #expect(daemon.log.contains("libcurl.so.4"), "\(daemon.log)")
        try cookieRoundTrip(client, id: 3)
    }

    @Test func aLibsodiumThatCannotBeLoadedLeavesTheFleetOutAndCookiesStillWork() throws {
        let files = TemporaryDirectory()
        try "not a library".write(toFile: files.file("libsodium.so.23"), atomically: true, encoding: .utf8)
        let key = files.file("fleet.key")
        try (String(repeating: "ab", count: 32) + "\n").write(toFile: key, atomically: true, encoding: .utf8)
        chmod(key, 0o600)
        let daemon = try DaemonHarness(
            config: "[Fleet]\nRedis=unix:\(files.file("redis.sock"))\nName=gateways\nKeyFile=\(key)\n",
            environment: ["LD_LIBRARY_PATH": files.path])
        let client = try daemon.connectReady()
        try cookieRoundTrip(client)
        #expect(try client.call("status", [:], id: 3)?["result"]?["fleet"] == nil)
        #expect(daemon.log.contains("serving without it: cannot load libsodium.so.23"), "\(daemon.log)")
    }

    // MARK: helpers

    /// Stores a cookie and reads it back.
    func cookieRoundTrip(_ client: LineClient, id: Int = 1) throws {
        let url = "https://shop.example.com/"
        let set = try client.call("handleSetCookie", ["url": .string(url), "setCookie": ["sid=1; Path=/"]], id: id)
        #expect(set?["result"]?["stored"] == 1, "\(set?.encodedString ?? "no answer")")
        let get = try client.call("getCookieHeader", ["url": .string(url)], id: id + 1)
        #expect(get?["result"]?["header"] == "sid=1", "\(get?.encodedString ?? "no answer")")
    }

    /// The files mapped into process `pid` (the path column of /proc/PID/maps).
    func mappedFiles(_ pid: pid_t) throws -> Set<String> {
        let maps = String(decoding: try Files.read("/proc/\(pid)/maps"), as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in line.split(separator: " ").last.map(String.init) })
    }
}
