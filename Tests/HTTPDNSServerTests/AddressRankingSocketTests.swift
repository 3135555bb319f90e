import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// `RankPorts=` and `DomainTTL=` against the real daemon (issue 29), with a loopback fake of the
/// HTTPDNS service and loopback probe targets on one port: 127.0.0.4 accepts at once, 127.0.0.2
/// listens with its accept queue full (its SYN is dropped: the connection opens only when the
/// client retransmits, a second later, once the test has made room), 127.0.0.3 is bound without
/// listening (refused). The policy itself is AddressRankingTests', on explicit instants.
struct AddressRankingSocketTests {
    /// The three targets, sharing a port the kernel picked for the first.
    struct ProbeTargets {
        let fast: FileDescriptor
        let slow: FileDescriptor
        let refusing: FileDescriptor
        /// The connection that fills the slow target's accept queue (backlog 0 holds one).
        let filler: FileDescriptor
        let port: UInt16

        init() throws {
            (fast, slow, refusing, port) = try Self.bindOnePort()
            guard case .inProgress(let filler) = try TCPConnect.start(address: [127, 0, 0, 2], port: port) else {
                throw HarnessError("the filler connection did not start")
            }
            self.filler = filler
            #expect(try filler.wait(for: .writable, timeoutMilliseconds: 10_000))
            #expect(TCPConnect.outcome(filler) == nil, "the filler is in the slow target's queue")
        }

        /// The three sockets on one port the kernel picked for the fast one (another, should a
        /// program hold it on 127.0.0.2 or 127.0.0.3).
        static func bindOnePort() throws -> (FileDescriptor, FileDescriptor, FileDescriptor, UInt16) {
            var attempt = 0
            while true {
                attempt += 1
                let (fast, port) = try TCPSocket.listenLoopback(address: "127.0.0.4", port: 0)
                do throws(SystemError) {
                    let (slow, _) = try TCPSocket.listenLoopback(address: "127.0.0.2", port: port, backlog: 0)
                    do throws(SystemError) {
                        let (refusing, _) = try TCPSocket.bindLoopback(address: "127.0.0.3", port: port)
                        return (fast, slow, refusing, port)
                    } catch {
                        slow.close()
                        throw error
                    }
                } catch {
                    fast.close()
                    guard error.errno == .addressInUse, attempt < 10 else { throw error }
                }
            }
        }

        /// Whether `listener` has a connection waiting, which it accepts and closes.
        static func accepted(_ listener: FileDescriptor) -> Bool {
            guard case .done(let connection)? = try? TCPSocket.accept(listener) else { return false }
            connection.close()
            return true
        }

        func close() {
            for fd in [fast, slow, refusing, filler] { fd.close() }
        }
    }

    /// The first resolve goes out in the upstream's order without waiting for any probe (the
    /// slow target's cannot have finished: its SYN was dropped); a later one comes back fastest
    /// first, refused last, once the probes are back. Each target saw exactly the probe's
    /// connection, and a name not in `RankPorts=` is never probed nor reordered.
    @Test func theSecondResolveComesBackRanked() throws {
        let targets = try ProbeTargets()
        defer { targets.close() }
        let given = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "rank.test": (given, [], 300), "plain.test": (given, [], 300),
        ])
        let daemon = try DaemonHarness(
            config: """
                [Resolver]
                Upstream=alibaba \(upstream.alibabaURL())
                RankPorts=rank.test:\(targets.port)
                """)
        let client = try daemon.connectReady()
        func addresses(_ host: String, id: Int) throws -> [String] {
            let reply = try #require(try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: id))
            return try #require(reply["result"]?["ipv4"]?.arrayValue, "\(reply.encodedString)").compactMap(
                \.stringValue)
        }

        #expect(try addresses("rank.test", id: 1) == given, "the first answer is not held for the probes")
        // Room in the slow target's queue: the probe's retransmitted SYN gets in.
        #expect(ProbeTargets.accepted(targets.slow))
        var id = 1
        var last: [String] = []
        let ranked = try eventually(60, every: 20) {
            id += 1
            last = try addresses("rank.test", id: id)
            return last == ["127.0.0.4", "127.0.0.2", "127.0.0.3"]
        }
        #expect(ranked, "still \(last)")
        #expect(eventually(30) { ProbeTargets.accepted(targets.fast) }, "the fast target was probed")
        #expect(eventually(30) { ProbeTargets.accepted(targets.slow) }, "the slow target was probed, and got in")

        #expect(try addresses("plain.test", id: id + 1) == given)
        #expect(try addresses("plain.test", id: id + 2) == given, "not ranked: in no RankPorts=")
        #expect(!ProbeTargets.accepted(targets.fast), "one probe per address per TTL: no second one")
        #expect(upstream.requests.compactMap { $0.queryValue("host") } == ["rank.test", "plain.test"])
    }

    /// `DomainTTL=` bounds the TTL `resolve` answers with by the name's most specific domain,
    /// others keep the global bounds; after SIGHUP new answers meet the new bounds while cached
    /// ones keep their expiry.
    @Test func ttlsAreBoundedPerDomainAndAReloadAppliesToNewAnswers() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "a.corp.example": (["192.0.2.1"], [], 5), "b.fast.corp.example": (["192.0.2.2"], [], 300),
            "c.example.org": (["192.0.2.3"], [], 5), "d.corp.example": (["192.0.2.4"], [], 5),
        ])
        func configuration(_ domainTTL: String) -> String {
            """
            [Resolver]
            Upstream=alibaba \(upstream.alibabaURL())
            MaxTTL=1h
            DomainTTL=\(domainTTL) corp.example
            DomainTTL=..2s fast.corp.example
            """
        }
        let daemon = try DaemonHarness(config: configuration("1min..10min"))
        let client = try daemon.connectReady()
        func ttl(_ host: String) throws -> Int64? {
            try client.call("resolve", ["host": .string(host), "family": "ipv4"])?["result"]?["ttl"]?.numberValue?
                .int64Value
        }
        #expect(try ttl("a.corp.example") == 60, "raised to its domain's MIN")
        #expect(try ttl("b.fast.corp.example") == 2, "the most specific domain's MAX")
        #expect(try ttl("c.example.org") == 5, "outside: the global bounds")

        try configuration("2min..10min").write(
            toFile: daemon.directory.file("httpdnsd.conf"), atomically: true, encoding: .utf8)
        #expect(daemon.reload(count: 1), "\(daemon.log)")
        #expect(try ttl("d.corp.example") == 120)
        let cached = try #require(try ttl("a.corp.example"))
        #expect(cached <= 60, "a cached answer keeps its expiry")
    }
}

/// The server's prober in-process: the resolver service on the manual clock with a transport the
/// test answers, its connects real, to the loopback targets of `AddressRankingSocketTests`.
struct AddressRankingServiceTests {
    /// The refused and the accepting target are decided by the kernel at once; the connection
    /// whose SYN was dropped ends at its deadline of the loop's clock (2 s), not a moment before,
    /// and only then ranks unreachable (after the refused one, which came first in the answer).
    @Test func aProbeThatNeverConnectsEndsAtItsDeadline() throws {
        let targets = try AddressRankingSocketTests.ProbeTargets()
        defer { targets.close() }
        let harness = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/1\nRankPorts=rank.test:\(targets.port)\n")
        let given = ["127.0.0.3", "127.0.0.2", "127.0.0.4"]
        let first = harness.resolve("rank.test", family: .ipv4)
        try #require(harness.transport.pending("rank.test")).answer(v4: given)
        #expect(first.result?.ipv4 == given)
        func ranked() -> [String]? { harness.resolve("rank.test", family: .ipv4).result?.ipv4 }

        let measured = ["127.0.0.4", "127.0.0.2", "127.0.0.3"]
        #expect(
            eventually(30) {
                harness.loop.runTurn(maxWaitMilliseconds: 10)
                return ranked() == measured
            }, "\(ranked() ?? [])")
        harness.advance(milliseconds: 1_999)
        #expect(ranked() == measured, "the slow probe is still running: not measured")
        harness.advance(milliseconds: 1)
        #expect(ranked() == ["127.0.0.4", "127.0.0.3", "127.0.0.2"])
    }
}
