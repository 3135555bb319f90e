import Foundation
import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// State that outlives the daemon: restarts, kill -9 under load, boot id changes, the DNS cache,
/// and a damaged database.
@Suite(.serialized)
struct PersistenceTests {
    static func setCookie(_ client: LineClient, _ cookie: String, id: Int = 1) throws -> JSON {
        try #require(
            try client.call(
                "handleSetCookie", ["url": "https://a.example.com/", "setCookie": [.string(cookie)]], id: id))
    }

    static func names(_ client: LineClient) throws -> Set<String> {
        let list = try #require(try client.call("listCookies", [:], id: 999)?["result"]?["cookies"]?.arrayValue)
        return Set(list.compactMap { $0["name"]?.stringValue })
    }

    @Test func cookiesSurviveARestartSessionCookiesToo() throws {
        let dir = TemporaryDirectory()
        do {
            let daemon = try DaemonHarness(directory: dir)
            let client = try daemon.connectReady()
            #expect(try Self.setCookie(client, "session=1; Path=/")["result"]?["stored"] == 1)
            #expect(try Self.setCookie(client, "persistent=2; Max-Age=3600", id: 2)["result"]?["stored"] == 1)
            daemon.stop()
            #expect(daemon.waitForExit() == 0)
        }
        let daemon = try DaemonHarness(directory: dir)
        let client = try daemon.connectReady()
        #expect(try Self.names(client) == ["session", "persistent"])
        let header = try #require(try client.call("getCookieHeader", ["url": "https://a.example.com/"])?["result"])
        #expect(header["count"] == 2)
    }

    @Test func sessionCookiesAreDroppedWhenTheBootIDChanges() throws {
        let dir = TemporaryDirectory()
        do {
            let daemon = try DaemonHarness(directory: dir)
            let client = try daemon.connectReady()
            _ = try Self.setCookie(client, "session=1")
            _ = try Self.setCookie(client, "persistent=2; Max-Age=3600", id: 2)
            daemon.stop()
        }
        // Pretend the stored jar comes from another boot.
        let database = dir.file("state") + "/httpdnsd.sqlite3"
        let update = try runCommand(
            "/usr/bin/sqlite3", [database, "UPDATE meta SET value = 'another-boot' WHERE key LIKE '%boot%';"])
        #expect(update.status == 0, "\(update.stderr)")
        let check = try runCommand("/usr/bin/sqlite3", [database, "SELECT value FROM meta WHERE key LIKE '%boot%';"])
        #expect(check.stdout.contains("another-boot"))
        let daemon = try DaemonHarness(directory: dir)
        let client = try daemon.connectReady()
        #expect(try Self.names(client) == ["persistent"])
    }

    /// Every acknowledged write is there after kill -9 at an arbitrary moment under load, and
    /// the database is intact; renewals that write nothing included.
    @Test func acknowledgedWritesSurviveKillNine() throws {
        let dir = TemporaryDirectory()
        // Room for every write: the jar's own LRU eviction (3000 by default) must not remove any.
        let daemon = try DaemonHarness(config: "[Cookies]\nMaxTotal=1000000\n", directory: dir)
        _ = try daemon.connectReady()
        let acknowledged = Mutex<Set<String>>([])
        let stop = Atomic<Bool>(false)
        let finished = Atomic<Int>(0)
        let socketPath = daemon.socketPath
        let writers = (0..<4).map { writer in
            Thread {
                defer { finished.add(1, ordering: .relaxed) }
                guard let client = try? LineClient(path: socketPath) else { return }
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    let name = "w\(writer)n\(n)"
                    n += 1
                    // One registrable domain per cookie: the per-domain limit (180) must not evict any.
                    let params: JSON = [
                        "url": .string("https://\(name).example/"), "setCookie": [.string("\(name)=v; Max-Age=3600")],
                    ]
                    // Every other cookie is sent twice in a row: the second, a renewal as stored
                    // (same second), writes nothing and is answered after the first's commit.
                    let set = #"{"jsonrpc":"2.0","id":1,"method":"handleSetCookie","params":\#(params.encodedString)}"#
                    let sends = n % 2 == 0 ? 1 : 2
                    guard (try? client.sendLine(Array(repeating: set, count: sends).joined(separator: "\n"))) != nil
                    else { return }
                    for _ in 0..<sends {
                        guard let response = client.readJSON(timeout: 5) else { return }
                        if response["result"]?["stored"] == 1 { acknowledged.withLock { _ = $0.insert(name) } }
                    }
                }
            }
        }
        for thread in writers { thread.start() }
        // Killed mid-load, once writes are being acknowledged.
        #expect(eventually { acknowledged.withLock { $0.count } >= 20 })
        daemon.signal(SIGKILL)
        _ = daemon.waitForExit()
        stop.store(true, ordering: .relaxed)
        // Every acknowledgement that reached a writer is counted once all writers have ended.
        #expect(eventually { finished.load(ordering: .relaxed) == writers.count })
        let written = acknowledged.withLock { $0 }
        #expect(written.count > 10, "only \(written.count) writes were acknowledged")

        let integrity = try runCommand(
            "/usr/bin/sqlite3", [dir.file("state") + "/httpdnsd.sqlite3", "PRAGMA integrity_check;"])
        #expect(integrity.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        let restarted = try DaemonHarness(config: "[Cookies]\nMaxTotal=1000000\n", directory: dir)
        let client = try restarted.connectReady()
        let present = try Self.names(client)
        let lost = written.subtracting(present)
        #expect(lost.isEmpty, "lost \(lost.count) acknowledged cookies, e.g. \(lost.prefix(5))")
    }

    @Test func theDNSCacheSurvivesARestartWithTheUpstreamDown() throws {
        let dir = TemporaryDirectory()
        var upstream: FakeHTTPServer? = try FakeHTTPServer.alibaba(
            answers: ["a.example.com": (["203.0.113.10"], [], 120)])
        let config = "[Resolver]\nUpstream=alibaba \(upstream!.alibabaURL())\nTimeout=1s\n"
        do {
            let daemon = try DaemonHarness(config: config, directory: dir)
            let client = try daemon.connectReady()
            #expect(try client.call("resolve", ["host": "a.example.com"])?["result"]?["source"] == "upstream")
            daemon.stop()
        }
        upstream?.stop()
        upstream = nil
        let daemon = try DaemonHarness(config: config, directory: dir)
        let client = try daemon.connectReady()
        let response = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(response["result"]?["ipv4"] == ["203.0.113.10"], "\(response.encodedString)")
        #expect(response["result"]?["source"] == "cache")
        // IP -> host memory came back too: a cookie from the IP lands under the name.
        let stored = try #require(
            try client.call("handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["k=v"]], id: 2))
        #expect(stored["result"]?["host"] == "a.example.com")
    }

    /// The saved cache is put back after the daemon starts serving: a stop that comes first must
    /// still save all of it, and the first requests (a cookie lookup, then resolves and an IP URL)
    /// see all of it.
    @Test func theSavedCacheIsKeptAndServedWhateverComesFirstAfterAStart() throws {
        let dir = TemporaryDirectory()
        let names = (0..<1500).map { "n\($0).example.com" }
        var answers: [String: ([String], [String], Int)] = [:]
        for (index, name) in names.enumerated() { answers[name] = (["198.51.\(index / 256).\(index % 256)"], [], 600) }
        var upstream: FakeHTTPServer? = try FakeHTTPServer.alibaba(answers: answers)
        // 1500 names from one uid: its rate of new upstream queries raised for the test.
        let config =
            "[Resolver]\nUpstream=alibaba \(upstream!.alibabaURL())\nTimeout=1s\nCacheSize=4096\n"
            + "UpstreamQueryBurstPerUser=5000\n"
        do {
            let daemon = try DaemonHarness(config: config, directory: dir)
            let client = try daemon.connectReady()
            for (index, name) in names.enumerated() {
                #expect(
                    try client.call("resolve", ["host": .string(name), "family": "ipv4"], id: index)?["result"] != nil)
            }
            daemon.stop()
        }
        upstream?.stop()
        upstream = nil
        // Stopped as soon as it is ready, before anything asked for the cache.
        do {
            let daemon = try DaemonHarness(config: config, directory: dir)
            _ = try daemon.connectReady()
            daemon.stop()
            #expect(daemon.waitForExit() == 0)
        }
        let daemon = try DaemonHarness(config: config, directory: dir)
        let client = try daemon.connectReady()
        #expect(try client.call("getCookieHeader", ["url": "https://n1.example.com/"])?["result"] != nil)
        let last = try #require(
            try client.call("resolve", ["host": .string(names[names.count - 1]), "family": "ipv4"]))
        #expect(last["result"]?["source"] == "cache", "\(last.encodedString)")
        #expect(
            try client.call("status")?["result"]?["cache"]?["entries"]?.numberValue?.int64Value == Int64(names.count))
        let stored = try #require(
            try client.call("handleSetCookie", ["url": "https://198.51.0.7/", "setCookie": ["k=v"]], id: 2))
        #expect(stored["result"]?["host"] == "n7.example.com")
    }

    @Test func aDamagedDatabaseIsAClearErrorOrIsMovedAside() throws {
        let dir = TemporaryDirectory()
        let state = dir.file("state")
        try Files.createDirectory(state, mode: 0o700)
        try String(repeating: "not a database ", count: 512).write(
            toFile: state + "/httpdnsd.sqlite3", atomically: true, encoding: .utf8)
        let httpdnsd = BuiltProducts.path("httpdnsd")
        let refused = try runCommand(
            httpdnsd, ["--config", "/dev/null", "--socket", dir.file("x.sock"), "--state-dir", state])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("httpdnsd.sqlite3"), "\(refused.stderr)")
        #expect(refused.stderr.contains("ResetOnCorruption"))

        let daemon = try DaemonHarness(config: "[Store]\nResetOnCorruption=yes\n", directory: dir)
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        let moved = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains(".corrupt-") }
        #expect(!moved.isEmpty)
        daemon.stop()
        #expect(daemon.log.contains("corrupt"))
    }
}

/// A full disk fails the write with an error to the client (-32603) and loses nothing acknowledged.
@Suite(.serialized)
struct DiskFullSocketTests {
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskFailsTheWriteAndKeepsWhatWasAcknowledged() throws {
        let dir = TemporaryDirectory()
        let state = dir.file("state")
        #expect(mkdir(state, 0o700) == 0)
        try #require(mount("tmpfs", state, "tmpfs", 0, "size=1m,mode=0700") == 0, "mount: errno \(errno)")
        defer { umount2(state, Int32(MNT_DETACH)) }
        let daemon = try DaemonHarness(directory: dir)
        let client = try daemon.connectReady()
        let kept = try PersistenceTests.setCookie(client, "kept=1; Max-Age=3600")
        #expect(kept["result"]?["stored"] == 1)

        // Fill the file system to the last byte.
        let filler = state + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let block = [UInt8](repeating: 7, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)

        var failure: JSON?
        for i in 0..<50 where failure == nil {
            // Large values so the WAL must grow.
            let big = String(repeating: "v", count: 3000)
            let response = try PersistenceTests.setCookie(client, "big\(i)=\(big); Max-Age=3600", id: 10 + i)
            if response["error"] != nil { failure = response }
        }
        let error = try #require(failure, "no write failed on a full disk")
        #expect(error["error"]?["code"] == .int(-32603), "\(error.encodedString)")
        #expect(error["error"]?["data"]?["name"] == "InternalError")
        #expect(try PersistenceTests.names(client).contains("kept"))

        unlink(filler)
        // Writes resume once there is room again (a moment may pass before the space is seen).
        var after: JSON = .null
        var id = 99
        _ = try eventually(10, every: 100) {
            id += 1
            after = try PersistenceTests.setCookie(client, "after=1; Max-Age=3600", id: id)
            return after["result"] != nil
        }
        #expect(after["result"]?["stored"] == 1, "\(after.encodedString)")
        daemon.stop()
        #expect(daemon.waitForExit() == 0)
        let restarted = try DaemonHarness(directory: dir)
        let names = try PersistenceTests.names(try restarted.connectReady())
        #expect(names.contains("kept") && names.contains("after"))
        restarted.stop()
    }
}

/// Exit on idle, then activation by the next connection, with nothing lost.
@Suite(.serialized)
struct IdleExitActivationTests {
    @Test func idleExitThenTheNextConnectionStartsItAgainWithNothingLost() throws {
        let dir = TemporaryDirectory()
        let activator = try SocketActivator(directory: dir, config: "[Server]\nIdleExit=1s\n")
        do {
            let client = try LineClient(path: activator.socketPath)
            let stored = try #require(
                try client.call(
                    "handleSetCookie", ["url": "https://a.example.com/", "setCookie": ["sid=kept; Path=/"]]))
            #expect(stored["result"]?["stored"] == 1, "\(stored.encodedString) \(activator.log)")
            client.shutdownWrite()
            _ = client.readLine(timeout: 2)
        }
        #expect(activator.waitForLatestExit(timeout: 10) == 0, "\(activator.log)")
        #expect(activator.notify.waitFor("STOPPING=1", timeout: 1))
        #expect(activator.activations == 1)

        let client = try LineClient(path: activator.socketPath)
        let header = try #require(try client.call("getCookieHeader", ["url": "https://a.example.com/"]))
        #expect(header["result"]?["header"] == "sid=kept", "\(header.encodedString) \(activator.log)")
        #expect(activator.activations == 2)
        activator.stop()
    }

    /// A client reconnects once when the daemon went away under it (socket activation
    /// starts the next one), and the session cookie is still there.
    @Test func theClientReconnectsOnceAfterTheDaemonRestarted() throws {
        let dir = TemporaryDirectory()
        let activator = try SocketActivator(directory: dir, config: "[Server]\nIdleExit=0\n")
        let connection = HTTPDNSConnection(socketPath: activator.socketPath)
        let stored = try connection.handleSetCookie(url: "https://a.example.com/", host: nil, setCookie: ["sid=1"])
        #expect(stored.stored == 1)
        activator.signalLatest(SIGTERM)
        #expect(activator.waitForLatestExit(timeout: 10) == 0)
        // The same connection object: its socket is dead, the call reconnects and activation starts
        // a new daemon.
        let header = try connection.cookieHeader(url: "https://a.example.com/", host: nil)
        #expect(header.header == "sid=1")
        #expect(activator.activations == 2)
        activator.stop()
    }
}
