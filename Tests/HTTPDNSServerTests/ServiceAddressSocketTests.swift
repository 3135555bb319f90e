import Foundation
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// Service-address scheduling against the real daemon (issue 29), every peer a loopback fake on
/// one port at its own 127.0.0.x: a scheduler listing three service addresses, the first refusing
/// connections, the second hanging, the third answering. The rules are ServiceAddressTests' and
/// ResolverServiceAddressTests', on a manual clock.
@Suite(.serialized)
struct ServiceAddressSocketTests {
    /// The scheduler and the service addresses, sharing one port (the scheduler's answer holds
    /// addresses only: the port is the upstream URL's).
    final class Fakes {
        let good: FakeHTTPServer
        var scheduler: FakeHTTPServer?
        let slow: FakeHTTPServer
        /// Bound, never listening: connections to 127.0.0.3 on the port are refused.
        let refusing: FileDescriptor
        var port: UInt16 { good.port }

        init() throws {
            good = try FakeHTTPServer.alibaba(
                answers: [
                    "www.example.test": (["192.0.2.10"], [], 300), "api.example.test": (["192.0.2.11"], [], 300),
                ],
                address: "127.0.0.5")
            let port = good.port
            slow = try FakeHTTPServer(address: "127.0.0.4", port: port) { _ in .hang }
            refusing = try TCPSocket.bindLoopback(address: "127.0.0.3", port: port).fd
            scheduler = try Self.scheduler(port: port)
        }

        static func scheduler(port: UInt16) throws -> FakeHTTPServer {
            try FakeHTTPServer(address: "127.0.0.2", port: port) { request in
                guard request.path == "/100000/ss", request.queryValue("region") == "cn" else {
                    return .json(#"{"code":"InvalidAccount"}"#, status: 403)
                }
                return .json(#"{"service_ip":["127.0.0.3","127.0.0.4","127.0.0.5"],"service_ipv6":[]}"#)
            }
        }

        var config: String {
            """
            [Resolver]
            Upstream=alibaba http://127.0.0.2:\(port)/100000
            AlibabaRegion=cn
            AlibabaBootAddresses=127.0.0.2
            Timeout=1s
            """
        }

        deinit {
            refusing.close()
            slow.stop()
        }
    }

    static func serviceAddresses(_ client: LineClient, id: Int) throws -> JSON? {
        try client.call("status", [:], id: id)?["result"]?["upstreams"]?.arrayValue?.first?["serviceAddresses"]
    }

    /// Resolves `host` until the good address answers it (each failure is one service failure of
    /// the address in use), at most `attempts` times.
    static func resolveUntilAnswered(_ client: LineClient, _ host: String, attempts: Int) throws -> (JSON, Int) {
        for attempt in 1...attempts {
            let reply = try #require(
                try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: attempt))
            if reply["result"] != nil { return (reply, attempt) }
        }
        Issue.record("\(host) was never answered")
        throw HarnessError("never answered")
    }

    @Test func rotatesPastARefusingAndAHangingAddressAndRestartsFromTheSavedList() throws {
        let fakes = try Fakes()
        let directory = TemporaryDirectory()
        do {
            let daemon = try DaemonHarness(config: fakes.config, directory: directory)
            defer { daemon.stop() }
            let client = try daemon.connectReady()
            // The scheduler is asked at start: wait for its list before resolving.
            _ = try eventually(20) { try Self.serviceAddresses(client, id: 100)?["source"] == "scheduler" }
            let (reply, attempts) = try Self.resolveUntilAnswered(client, "www.example.test", attempts: 12)
            #expect(reply["result"]?["ipv4"] == ["192.0.2.10"], "\(reply.encodedString)")
            // Three refused connections rotate 127.0.0.3 out, three time-outs 127.0.0.4; each
            // refused connection is asked again at once at the next address (127.0.0.4, which
            // hangs), so a resolve meets both. (One more while the last time-out that rotates
            // 127.0.0.4 out is still being counted.)
            #expect((4...7).contains(attempts), "\(daemon.log)")
            #expect(fakes.good.requests.map(\.path) == ["/100000/d"])
            #expect(fakes.slow.acceptedConnections >= 1)
            #expect(fakes.scheduler?.requests.map(\.path) == ["/100000/ss"])

            let list = try #require(try Self.serviceAddresses(client, id: 101))
            #expect(list["current"] == "127.0.0.5", "\(list.encodedString)")
            #expect(list["addresses"]?.arrayValue?.map { $0["address"] } == ["127.0.0.3", "127.0.0.4", "127.0.0.5"])
            #expect(list["addresses"]?.arrayValue?.map { $0["backingOff"] } == [true, true, false])
            #expect(list["schedulerError"] == .null)
            let human = try CtlEndToEndTests.ctl(["--socket", daemon.socketPath, "status"])
            #expect(
                human.stdout.contains(
                    "  service addresses (scheduler): 127.0.0.3 rotated out, 127.0.0.4 rotated out, 127.0.0.5 in use\n"),
                "\(human.stdout)")
            #expect(daemon.log.contains("service address 127.0.0.3 failed 3 times in a row"), "\(daemon.log)")
            let saved = try String(contentsOfFile: daemon.stateDirectory + "/service-addresses.json", encoding: .utf8)
            #expect(saved.contains(#""addresses":["127.0.0.3","127.0.0.4","127.0.0.5"]"#), "\(saved)")
        }

        // The scheduler is down: the restarted daemon works from the saved list, not the boot address.
        fakes.scheduler?.stop()
        fakes.scheduler = nil
        let daemon = try DaemonHarness(config: fakes.config, directory: directory)
        defer { daemon.stop() }
        let client = try daemon.connectReady()
        let list = try #require(try Self.serviceAddresses(client, id: 100))
        #expect(list["source"] == "persisted", "\(list.encodedString)")
        #expect(list["addresses"]?.arrayValue?.map { $0["address"] } == ["127.0.0.3", "127.0.0.4", "127.0.0.5"])
        let (reply, _) = try Self.resolveUntilAnswered(client, "api.example.test", attempts: 12)
        #expect(reply["result"]?["ipv4"] == ["192.0.2.11"], "\(reply.encodedString)")
        #expect(fakes.good.requests.compactMap { $0.queryValue("host") } == ["www.example.test", "api.example.test"])
        // The saved list is fresh: the scheduler is asked again only once it is SchedulerRefresh= old.
        let refresh = try #require(try Self.serviceAddresses(client, id: 102)?["nextRefresh"]?.numberValue?.doubleValue)
        #expect(refresh > 21_000)
    }
}
