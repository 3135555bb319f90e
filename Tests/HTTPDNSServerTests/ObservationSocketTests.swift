import Foundation
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// showCache, statistics, resetStatistics, metrics and monitor over the real socket, as root and
/// as uid 65534, with a fake Alibaba upstream on 127.0.0.1.
@Suite(.serialized, .enabled(if: OtherUser.available, OtherUser.skipReason))
struct ObservationSocketTests {
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "a.example.com": (["203.0.113.10"], ["2001:db8::10"], 120),
        "b.example.com": (["203.0.113.20"], [], 120),
    ]

    static func start(config: String) throws -> DaemonHarness {
        let daemon = try DaemonHarness(config: config)
        _ = try daemon.connectReady()
        try OtherUser.admit(daemon)
        return daemon
    }

    static func result(_ response: JSON?) throws -> JSON {
        let response = try #require(response)
        return try #require(response["result"], "\(response.encodedString)")
    }

    /// Root sees every entry; uid 65534 only the names it asked for, with what resolvectl
    /// show-cache shows (family, addresses, TTL left, the upstream, stale or not).
    @Test func showCacheShowsAUserOnlyTheNamesItAskedFor() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try Self.start(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let root = try daemon.connect()
        _ = try Self.result(root.call("resolve", ["host": "a.example.com"]))
        _ = try Self.result(OtherUser.call(daemon, "resolve", ["host": "b.example.com"]))

        let own = try Self.result(OtherUser.call(daemon, "showCache"))
        let entries = try #require(own["entries"]?.arrayValue)
        #expect(entries.map { $0["host"] } == ["b.example.com", "b.example.com"])
        #expect(entries.map { $0["family"] } == ["ipv4", "ipv6"])
        #expect(entries[0]["addresses"] == ["203.0.113.20"])
        #expect(entries[1]["addresses"] == [], "no IPv6 address: a negative entry")
        let ttl = try #require(entries[0]["ttl"]?.numberValue?.int64Value)
        #expect(ttl > 0 && ttl <= 120)
        #expect(entries[0]["upstream"] == "alibaba")
        #expect(entries[0]["stale"] == false)

        let all = try Self.result(root.call("showCache", id: 2))
        let hosts = try #require(all["entries"]?.arrayValue).map { $0["host"] }
        #expect(hosts == ["a.example.com", "a.example.com", "b.example.com", "b.example.com"])
    }

    /// statistics counts from the start or the last reset; only root resets it; metrics' counters
    /// go on, and Python's prometheus_client parser reads the exposition.
    @Test func statisticsResetByRootOnlyAndMetricsParse() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try Self.start(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let root = try daemon.connect()
        _ = try Self.result(root.call("resolve", ["host": "a.example.com"], id: 1))
        _ = try Self.result(root.call("resolve", ["host": "a.example.com"], id: 2))
        let set = try Self.result(
            root.call(
                "handleSetCookie",
                ["url": "https://a.example.com/", "setCookie": ["sid=abc; Secure", "tracker=1; Domain=com"]], id: 3))
        #expect(set["stored"] == 1)
        _ = try Self.result(root.call("getCookieHeader", ["url": "https://a.example.com/"], id: 4))

        let before = try Self.result(OtherUser.call(daemon, "statistics"))
        #expect(before["upstreams"] == [["name": "alibaba", "queries": 1, "failures": 0]])
        #expect(before["cache"]?["hits"] == 1 && before["cache"]?["misses"] == 1)
        #expect(before["cookies"] == ["stored": 1, "rejected": 1, "deleted": 0, "headers": 1])

        let refused = try OtherUser.call(daemon, "resetStatistics")
        #expect(refused["error"]?["code"] == -32004, "\(refused.encodedString)")
        #expect(try Self.result(root.call("statistics", id: 5))["cookies"]?["stored"] == 1, "nothing was reset")
        let reset = try Self.result(root.call("resetStatistics", id: 6))
        let after = try Self.result(root.call("statistics", id: 7))
        #expect(after["since"] == reset["since"])
        #expect(after["upstreams"] == [["name": "alibaba", "queries": 0, "failures": 0]])
        #expect(after["cookies"] == ["stored": 0, "rejected": 0, "deleted": 0, "headers": 0])
        #expect(after["cache"]?["hits"] == 0 && after["cache"]?["entries"] == 2)

        let metrics = try Self.result(OtherUser.call(daemon, "metrics"))
        #expect(metrics["contentType"] == "text/plain; version=0.0.4; charset=utf-8")
        let samples = try Self.parsePrometheus(try #require(metrics["text"]?.stringValue), in: daemon.directory)
        #expect(samples[#"httpdnsd_upstream_queries_total{upstream="alibaba"}"#] == 1, "counters never go back")
        #expect(samples[#"httpdnsd_upstream_latency_seconds_count{upstream="alibaba"}"#] == 1)
        #expect(samples[#"httpdnsd_upstream_latency_seconds_bucket{le="+Inf",upstream="alibaba"}"#] == 1)
        #expect(samples[#"httpdnsd_cache_lookups_total{result="hit"}"#] == 1)
        #expect(samples[#"httpdnsd_requests_total{method="resolve",outcome="ok"}"#] == 2)
        #expect(samples[#"httpdnsd_requests_total{method="resetStatistics",outcome="-32004"}"#] == 1)
        #expect(samples[#"httpdnsd_cookie_operations_total{operation="rejected"}"#] == 1)
        #expect(samples["httpdnsd_cookies"] == 1)
        #expect(samples["httpdnsd_cache_entries"] == 2)
        #expect((samples["httpdnsd_connections"] ?? 0) >= 2)
        #expect((samples["httpdnsd_held_bytes"] ?? 0) > 0)
    }

    /// Every sample of an exposition as prometheus_client's parser reads it: `name{labels}`
    /// (labels sorted) to value.
    static func parsePrometheus(_ text: String, in directory: TemporaryDirectory) throws -> [String: Double] {
        let file = directory.file("metrics.txt")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for s in family.samples:
                    labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
                    out[s.name + ("{%s}" % labels if labels else "")] = s.value
            print(json.dumps(out))
            """
        let run = try runCommand("/usr/bin/python3", ["-c", script, file])
        guard run.status == 0 else { throw HarnessError("prometheus_client refused the exposition: \(run.stderr)") }
        let parsed = try JSONParser.parse(run.stdout)
        var samples: [String: Double] = [:]
        for (key, value) in parsed.objectValue ?? [:] { samples[key] = value.numberValue?.doubleValue }
        return samples
    }

    /// Root's monitor sees every uid's resolves and cookie changes, with the uid and never a
    /// cookie's value; uid 65534's sees its own only.
    @Test func monitorShowsRootEveryoneAndAUserItsOwn() throws {
        let daemon = try Self.start(
            config: "[Resolver]\nStatic=root.example 192.0.2.1\nStatic=user.example 192.0.2.2\n")
        let rootMonitor = try daemon.connect()
        let answer = try Self.result(rootMonitor.call("monitor"))
        #expect(answer == ["scope": "all", "queueLimit": 1024])

        let flags = TemporaryDirectory(prefix: "monitor")
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: flags.path)
        let script = flags.file("user_monitor.py")
        try Self.userMonitor.write(toFile: script, atomically: true, encoding: .utf8)
        let user = try ChildProcess(
            OtherUser.setpriv,
            [
                "--reuid=\(OtherUser.uid)", "--regid=\(OtherUser.uid)", "--clear-groups", "/usr/bin/python3", script,
                daemon.socketPath, flags.path, "user.example",
            ], stdout: flags.file("out"), stderr: flags.file("err"))
        #expect(eventually(30) { Files.exists(flags.file("subscribed")) || !user.isRunning }, "the user subscribed")

        let root = try daemon.connect()
        _ = try Self.result(root.call("resolve", ["host": "root.example"], id: 1))
        _ = try Self.result(
            root.call("handleSetCookie", ["url": "https://root.example/", "setCookie": ["sid=SECRET-VALUE"]], id: 2))
        try "".write(toFile: flags.file("go"), atomically: true, encoding: .utf8)
        let status = user.wait(timeout: 30)
        #expect(status == 0, "\((try? String(contentsOfFile: flags.file("err"), encoding: .utf8)) ?? "")")

        let output = try JSONParser.parse(try String(contentsOfFile: flags.file("out"), encoding: .utf8))
        #expect(output["answer"]?["result"] == ["scope": "own", "queueLimit": 1024])
        let userEvents = try #require(output["events"]?.arrayValue)
        #expect(userEvents.map { $0["params"]?["host"] } == ["user.example"], "only its own resolve")
        #expect(userEvents.first?["params"]?["uid"] == .int(OtherUser.uid))
        #expect(userEvents.first?["params"]?["ipv4"] == ["192.0.2.2"])

        var rootEvents: [JSON] = []
        while rootEvents.last?["params"]?["host"] != "user.example", let line = rootMonitor.readLine() {
            #expect(!line.contains("SECRET-VALUE"), "a cookie's value never reaches a monitor")
            rootEvents.append(try JSONParser.parse(line))
        }
        let summary = rootEvents.map { event -> String in
            let p = event["params"]
            return "\(p?["uid"]?.numberValue?.int64Value ?? -1) \(p?["type"]?.stringValue ?? "") "
                + (p?["host"]?.stringValue ?? "\(p?["action"]?.stringValue ?? "") \(p?["name"]?.stringValue ?? "")")
        }
        #expect(summary == ["0 resolve root.example", "0 cookie stored sid", "65534 resolve user.example"])
        #expect(rootEvents.allSatisfy { $0["method"] == "monitorEvent" && $0["id"] == nil })
    }

    /// Run as uid 65534: subscribes, says so, waits for the test's go, resolves its own name on
    /// another connection and prints the answer and every event up to its own resolve's.
    static let userMonitor = """
        import json, os, socket, sys, time
        path, flags, own = sys.argv[1], sys.argv[2], sys.argv[3]
        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(path)
            return s
        monitor = connect()
        lines = monitor.makefile("rb")
        monitor.sendall(b'{"jsonrpc":"2.0","id":1,"method":"monitor"}\\n')
        answer = json.loads(lines.readline())
        open(os.path.join(flags, "subscribed"), "w").close()
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(flags, "go")):
            if time.monotonic() > deadline:
                sys.exit("no go")
            time.sleep(0.01)
        request = connect()
        request.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resolve", "params": {"host": own}}).encode() + b"\\n")
        request.makefile("rb").readline()
        events = []
        while not events or events[-1]["params"].get("host") != own:
            events.append(json.loads(lines.readline()))
        print(json.dumps({"answer": answer, "events": events}))
        """

    /// A subscriber that does not read holds at most its queue: later events are dropped, and
    /// what it then reads accounts for every one (delivered, or counted in a dropped event);
    /// metrics counts the drops too.
    @Test func aMonitorThatDoesNotReadDropsEventsAndSaysHowMany() throws {
        let daemon = try Self.start(config: "[Resolver]\nStatic=many.example 192.0.2.3\n")
        let monitor = try daemon.connect()
        try monitor.sendLine(#"{"jsonrpc":"2.0","id":1,"method":"monitor"}"#)
        let client = try daemon.connect()
        let total = 6_000
        for chunk in stride(from: 0, to: total, by: 500) {
            let lines = (chunk..<chunk + 500).map {
                #"{"jsonrpc":"2.0","id":\#($0),"method":"resolve","params":{"host":"many.example"}}"#
            }
            try client.send(lines.joined(separator: "\n") + "\n")
            for _ in 0..<500 { _ = try #require(client.readLine()) }
        }
        var delivered = 0
        var dropped = 0
        _ = try #require(monitor.readLine(), "the answer")
        while delivered + dropped < total, let line = monitor.readLine() {
            let params = try JSONParser.parse(line)["params"]
            if params?["type"] == "dropped" {
                dropped += Int(params?["count"]?.numberValue?.int64Value ?? 0)
            } else {
                delivered += 1
            }
        }
        #expect(delivered + dropped == total)
        #expect(dropped > 0 && delivered >= 1024, "delivered \(delivered), dropped \(dropped)")
        let metrics = try Self.result(client.call("metrics", id: 9_999))
        let samples = try Self.parsePrometheus(try #require(metrics["text"]?.stringValue), in: daemon.directory)
        #expect(samples["httpdnsd_monitor_dropped_events_total"] == Double(dropped))
        #expect(samples["httpdnsd_monitors"] == 1)
    }

    /// A uid holds at most 16 subscriptions (each event is copied to each): the 17th is -32003
    /// naming the limit, another uid still subscribes, and a closed one makes room.
    @Test func aUserHoldsAtMostSixteenMonitors() throws {
        let daemon = try Self.start(config: "[Resolver]\nStatic=a.example 192.0.2.3\n")
        var monitors: [LineClient] = []
        for index in 0..<16 {
            let monitor = try daemon.connect()
            #expect(try Self.result(monitor.call("monitor", id: index))["scope"] == "all")
            monitors.append(monitor)
        }
        let refusal = try #require(try daemon.connect().call("monitor", id: 99)?["error"])
        #expect(refusal["code"] == -32003)
        #expect(refusal["data"]?["limit"] == 16)
        #expect(refusal["data"]?["what"] == "monitor subscriptions of one user")
        #expect(try Self.result(OtherUser.call(daemon, "monitor"))["scope"] == "own")
        monitors.removeFirst()  // closed as it goes
        var accepted = false
        for attempt in 0..<300 where !accepted {
            accepted = try daemon.connect().call("monitor", id: attempt)?["result"] != nil
            if !accepted { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(accepted, "a closed subscription makes room")
    }
}
