import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// libcurl, hiredis and libsodium are loaded on first use (dlopen), not at start: a daemon that
/// only keeps cookies never maps them, and one that cannot load one still keeps cookies.
@Suite(.serialized)
struct OptionalLibrariesTests {
    static let zone = FakeDNSZone(records: [FakeDNSRecord("a.example.com", ttl: 60, .a("203.0.113.70"))])
    /// What /proc/PID/maps shows of each library once it is mapped.
    static let optional = ["libcurl.so", "libhiredis.so", "libsodium.so"]

    @Test func cookieLookupsMapNoOptionalLibraryAndAnHTTPUpstreamMapsLibcurl() throws {
        let upstream = try FakeHTTPServer.dohJSON(zone: Self.zone)
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\n")
        let client = try daemon.connectReady()
        try cookieRoundTrip(client)
        let before = try mappedFiles(daemon.process.pid)
        #expect(before.contains { $0.contains("libpsl.so") }, "the maps were read: \(before)")
        for library in Self.optional {
            #expect(!before.contains { $0.contains(library) }, "\(library) mapped before any use")
        }

        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"], id: 3))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.70"], "\(answer.encodedString)")
        let after = try mappedFiles(daemon.process.pid)
        #expect(after.contains { $0.contains("libcurl.so.4") }, "libcurl not mapped after an HTTP upstream's answer")
        #expect(!after.contains { $0.contains("libhiredis.so") || $0.contains("libsodium.so") })
    }

    @Test func aLibcurlThatCannotBeLoadedFailsTheUpstreamWithTheReasonAndCookiesStillWork() throws {
        let upstream = try FakeHTTPServer.dohJSON(zone: Self.zone)
        let libraries = TemporaryDirectory()
        // Found before the system's copy (LD_LIBRARY_PATH comes first), and not an ELF file.
        try "not a library".write(toFile: libraries.file("libcurl.so.4"), atomically: true, encoding: .utf8)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\nTimeout=2s\n",
            environment: ["LD_LIBRARY_PATH": libraries.path])
        let client = try daemon.connectReady()

        let failed = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(failed["error"] != nil, "\(failed.encodedString)")
        #expect(upstream.requestCount == 0)
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
