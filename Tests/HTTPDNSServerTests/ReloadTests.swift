import Foundation
import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// A reloaded configuration's server limits, taken by the running server on the manual clock:
/// open connections meet them at their next line.
@Suite(.serialized)
struct ServerReloadTests {
    @Test func anOpenConnectionMeetsTheReloadedBatchCap() throws {
        let harness = try InProcessServer(limits: InProcessServerTests.limits { $0.maxBatch = 4 })
        let peer = try harness.connect()
        let batch = JSON.array((1...3).map { peer.request("status", id: .int($0)) })
        try peer.send(batch)
        #expect(peer.awaitLines(1))
        #expect(peer.responses.last?.arrayValue?.count == 3)

        harness.server.apply(InProcessServerTests.limits { $0.maxBatch = 2 })
        try peer.send(batch)
        #expect(peer.awaitLines(2))
        #expect(peer.responses.last?["error"]?["code"] == .int(-32003), "\(peer.lines)")
        #expect(!peer.reachedEOF)
    }

    /// A shorter IdleTimeout= re-arms the sweep: an idle connection goes by the new deadline.
    @Test func aShorterIdleTimeoutClosesAnIdleConnectionByTheNewDeadline() throws {
        let harness = try InProcessServer(limits: InProcessServerTests.limits { $0.idleTimeoutMilliseconds = 600_000 })
        let idle = try harness.connect()
        #expect(harness.run { harness.server.connectionCount == 1 })
        harness.advance(milliseconds: 1_000)
        idle.receive()
        #expect(!idle.reachedEOF)
        harness.server.apply(InProcessServerTests.limits { $0.idleTimeoutMilliseconds = 1_000 })
        harness.advance(milliseconds: 1_300)
        #expect(idle.awaitEOF())
    }
}

/// What a reload takes at once and what waits for a restart.
struct ConfigurationReloadTests {
    static func parse(_ text: String) throws -> DaemonConfiguration {
        try DaemonConfiguration.parse(text: text, path: "test.conf").get().0
    }

    @Test func reloadableSettingsAreTakenAndTheRestKeepTheirRunningValues() throws {
        let running = try Self.parse(
            """
            [Resolver]
            Static=a.test 127.0.0.1
            Prefetch=p.test
            [Server]
            Socket=/run/a.sock
            """)
        let loaded = try Self.parse(
            """
            [Resolver]
            Static=a.test 127.0.0.2
            Prefetch=q.test
            MaxTTL=1h
            [Cookies]
            MaxTotal=100
            [Server]
            Socket=/run/b.sock
            MaxBatch=8
            LogLevel=debug
            [Store]
            Synchronous=full
            """)
        let reload = ConfigurationReload(running: running, loaded: loaded)
        #expect(reload.pendingRestart == ["Socket=", "[Store]", "Prefetch="])
        #expect(reload.changedSections == ["[Resolver]", "[Cookies]", "[Server]"])
        #expect(reload.effective.resolver.staticAnswers == loaded.resolver.staticAnswers)
        #expect(reload.effective.resolver.maxTTLMs == 3_600_000)
        #expect(reload.effective.cookies.maxTotal == 100)
        #expect(reload.effective.server.maxBatch == 8 && reload.effective.server.logLevel == .debug)
        #expect(reload.effective.server.socket == "/run/a.sock")
        #expect(reload.effective.store == running.store)
        #expect(reload.effective.resolver.prefetch == ["p.test"])
    }

    @Test func theSameFileChangesNothing() throws {
        let configuration = try Self.parse("[Resolver]\nStatic=a.test 127.0.0.1\n[Cookies]\nMaxTotal=10\n")
        let reload = ConfigurationReload(running: configuration, loaded: configuration)
        #expect(reload.effective == configuration)
        #expect(reload.changedSections.isEmpty && reload.pendingRestart.isEmpty)
    }
}

/// SIGHUP to the real daemon under systemd-socket-activate: a changed Static=, upstream and limit
/// are in use on a connection opened before, the cache and the jar stay, the notify protocol says
/// RELOADING=1 (with MONOTONIC_USEC=) then READY=1, and a bad file changes nothing.
@Suite(.serialized)
struct ReloadSocketTests {
    static func configuration(upstream: FakeHTTPServer, fixed: String, maxBatch: Int) -> String {
        """
        [Resolver]
        Upstream=alibaba \(upstream.alibabaURL())
        Static=fixed.reload.test \(fixed)
        [Server]
        MaxBatch=\(maxBatch)

        """
    }

    static func address(_ answer: JSON?) -> String? { answer?["result"]?["ipv4"]?.arrayValue?.first?.stringValue }

    @Test func sighupAppliesTheNewFileAndKeepsConnectionsJarAndCache() throws {
        let first = try FakeHTTPServer.alibaba(answers: ["a.reload.test": (["127.0.0.10"], [], 300)])
        let second = try FakeHTTPServer.alibaba(
            answers: ["a.reload.test": (["127.0.0.20"], [], 300), "b.reload.test": (["127.0.0.21"], [], 300)])
        let daemon = try DaemonHarness(
            config: Self.configuration(upstream: first, fixed: "127.0.0.1", maxBatch: 4))
        let client = try daemon.connectReady()
        #expect(Self.address(try client.call("resolve", ["host": "fixed.reload.test"])) == "127.0.0.1")
        #expect(Self.address(try client.call("resolve", ["host": "a.reload.test", "family": "ipv4"])) == "127.0.0.10")
        let set = try client.call(
            "handleSetCookie", ["url": "https://a.reload.test/", "setCookie": ["sid=kept; Path=/; Secure"]])
        #expect(set?["error"] == nil)
        let batch =
            "[" + (1...3).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"status"}"# }.joined(separator: ",") + "]"
        try client.sendLine(batch)
        #expect(client.readJSON()?.arrayValue?.count == 3)

        try Self.configuration(upstream: second, fixed: "127.0.0.2", maxBatch: 2)
            .appending("[Store]\nSynchronous=full\n")
            .write(toFile: daemon.directory.file("httpdnsd.conf"), atomically: true, encoding: .utf8)
        #expect(daemon.reload(count: 1), "\(daemon.notify.received) \(daemon.log)")
        let reloading = try #require(daemon.notify.received.first { $0.contains("RELOADING=1") })
        let monotonic = reloading.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }
        #expect(monotonic.flatMap { Int64($0.dropFirst("MONOTONIC_USEC=".count)) }.map { $0 > 0 } == true)

        // The same connection: the new Static= answer, the cached answer of the old upstream
        // (the cache stays), a new name through the new upstream, the jar, the new batch cap.
        #expect(Self.address(try client.call("resolve", ["host": "fixed.reload.test"])) == "127.0.0.2")
        let cached = try client.call("resolve", ["host": "a.reload.test", "family": "ipv4"])
        #expect(
            Self.address(cached) == "127.0.0.10" && cached?["result"]?["source"] == "cache",
            "\(String(describing: cached))")
        #expect(Self.address(try client.call("resolve", ["host": "b.reload.test", "family": "ipv4"])) == "127.0.0.21")
        let header = try client.call("getCookieHeader", ["url": "https://a.reload.test/"])
        #expect(header?["result"]?["header"] == "sid=kept")
        try client.sendLine(batch)
        #expect(client.readJSON()?["error"]?["code"] == .int(-32003))
        let upstreams = try client.call("status")?["result"]?["upstreams"]?.arrayValue ?? []
        #expect(upstreams.count == 1)
        #expect(daemon.log.contains("[Store] changed"), "\(daemon.log)")
        #expect(daemon.log.contains("Reloaded the configuration"), "\(daemon.log)")

        // A bad file: every problem logged, the running configuration kept, still serving.
        try "[Resolver]\nUpstrem=system\nMaxTTL=banana\n".write(
            toFile: daemon.directory.file("httpdnsd.conf"), atomically: true, encoding: .utf8)
        #expect(daemon.reload(count: 2), "\(daemon.notify.received) \(daemon.log)")
        let log = daemon.log
        #expect(log.contains("Failed to reload the configuration"), "\(log)")
        #expect(log.contains("Upstrem=") && log.contains("MaxTTL="), "\(log)")
        #expect(Self.address(try client.call("resolve", ["host": "fixed.reload.test"])) == "127.0.0.2")
        #expect(Self.address(try daemon.connect().call("resolve", ["host": "fixed.reload.test"])) == "127.0.0.2")
        #expect(daemon.process.isRunning)
    }
}

/// The resolver's part of a reload, in-process on the manual clock with a transport the test
/// answers (upstreams are named by their kind: doh-json is kept, doh removed, tencent added): a running exchange on an upstream the reload removed still answers its callers
/// (and moves no health), new names go to the new list, a kept upstream keeps its health, a
/// changed `Static=` answers anew, and the cache stays.
@Suite(.serialized)
struct ResolverReloadTests {
    static func configuration(_ lines: String) throws -> DaemonConfiguration {
        try DaemonConfiguration.parse(text: "[Resolver]\n" + lines, path: "test").get().0
    }

    @Test func aReloadSwapsUpstreamsAndStaticAnswersAndKeepsTheCacheAndRunningFlights() throws {
        let harness = try ResolverHarness(
            """
            Upstream=doh-json https://kept.example/resolve
            Upstream=doh https://old.example/dns-query
            Static=fixed.test 127.0.0.1
            """)
        let cached = harness.resolve("cached.test", family: .ipv4)
        try #require(harness.transport.pending.count == 1)
        harness.transport.pending[0].answer(v4: ["127.0.0.5"])
        #expect(cached.result?.ipv4 == ["127.0.0.5"])
        // A flight whose first upstream fails goes on to the one the reload removes.
        let running = harness.resolve("running.test", family: .ipv4)
        try #require(harness.transport.pending.first?.upstream == "doh-json")
        harness.transport.pending[0].fail(.httpStatus(500))
        let onOld = try #require(harness.transport.pending.first)
        #expect(onOld.upstream == "doh")
        #expect(harness.upstreams["doh-json"]?.healthy == false)

        harness.service.apply(
            try Self.configuration(
                """
                Upstream=tencent http://new.example/d
                Upstream=doh-json https://kept.example/resolve
                Static=fixed.test 127.0.0.2
                MaxTTL=60
                """))
        #expect(harness.transport.applied.count == 1)
        #expect(harness.service.upstreamStatus.map(\.name) == ["tencent", "doh-json"])
        // The kept upstream kept its health; the new one starts healthy.
        #expect(harness.upstreams["doh-json"]?.healthy == false)
        #expect(harness.upstreams["tencent"]?.healthy == true)

        // The exchange on the removed upstream finishes and answers its caller.
        onOld.answer(v4: ["127.0.0.6"])
        #expect(running.result?.ipv4 == ["127.0.0.6"])

        // Static= answers anew; the cache kept its answer; a new name asks the new upstream,
        // and its TTL meets the new MaxTTL=.
        #expect(harness.resolve("fixed.test", family: .ipv4).result?.ipv4 == ["127.0.0.2"])
        let again = harness.resolve("cached.test", family: .ipv4)
        #expect(again.result?.ipv4 == ["127.0.0.5"] && again.result?.source == .cache)
        let fresh = harness.resolve("fresh.test", family: .ipv4)
        let asked = try #require(harness.transport.pending.last)
        #expect(asked.upstream == "tencent")
        asked.answer(v4: ["127.0.0.8"], ttl: 300)
        #expect(fresh.result?.ttl == 60)
    }
}
