import CHTTPDNSHostsMap
import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// The hosts map (httpdnsd(8), SHARED HOSTS MAP): the daemon publishes what the module was
/// answered, the module answers repeated lookups from it without reaching the daemon, and
/// whatever the file holds or becomes, an answer is valid, unexpired and the socket's otherwise.
@Suite(.serialized)
struct NSSHostsMapTests {
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "dual.map.test": (["127.0.0.25"], ["fd00::25"], 300),
        "four.map.test": (["127.0.0.31", "127.0.0.32"], [], 300),
        "brief.map.test": (["127.0.0.41"], [], 3),
    ]

    /// The real daemon on a fake Alibaba upstream; its socket directory holds the map.
    struct Setup {
        let upstream: FakeHTTPServer
        let daemon: DaemonHarness
        let artifacts: NSSArtifacts

        /// With `namespace`, the daemon and its upstream run in that network namespace (the probe,
        /// outside, reaches the daemon by its socket's path and reads the same map file).
        init(extraConfig: String = "", namespace: NetworkNamespace? = nil) throws {
            artifacts = try NSSArtifacts.get()
            let makeUpstream: @Sendable () throws -> FakeHTTPServer = {
                try FakeHTTPServer.alibaba(answers: NSSHostsMapTests.answers)
            }
            upstream = try namespace.map { try $0.inside(makeUpstream) } ?? makeUpstream()
            daemon = try DaemonHarness(
                config: Self.config(upstream, extraConfig), launcher: namespace?.launcher ?? [])
            _ = try daemon.connectReady()
        }

        static func config(_ upstream: FakeHTTPServer, _ extra: String) -> String {
            "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nRoute=alibaba map.test\n" + extra
        }

        var mapPath: String { daemon.directory.file("map/hosts.map") }

        /// Rewrites the configuration file and reloads it (SIGHUP), waiting for the `count`th reload.
        func reload(extraConfig: String, count: Int) throws {
            try Self.config(upstream, extraConfig).write(
                toFile: daemon.directory.file("httpdnsd.conf"), atomically: true, encoding: .utf8)
            #expect(daemon.reload(count: count), "\(daemon.log)")
        }

        /// A probe running `steps` in the background, its lines in a file of the daemon's directory.
        func background(_ steps: [String]) throws -> (process: ChildProcess, lines: () -> [[String: String]]) {
            let output = daemon.directory.file("background-\(UUID().uuidString).out")
            let process = try ChildProcess(
                artifacts.probe, [artifacts.module, "sequence"] + steps,
                environment: ["HTTPDNSD_SOCKET": daemon.socketPath, "PATH": "/usr/bin:/bin"], stdout: output,
                stderr: output)
            return (process, { NSSHostsMapTests.fields((try? String(contentsOfFile: output, encoding: .utf8)) ?? "") })
        }

        /// Lookups in one process (nss_probe's sequence: `LOOKUP:SUBJECT`, `wait:PATH`,
        /// `sleep:MS`), one result per lookup. `prefix` runs the probe (setpriv, unshare).
        func sequence(_ steps: [String], prefix: [String] = [], probe: String? = nil, module: String? = nil)
            throws -> [[String: String]]
        {
            let command = prefix + [probe ?? artifacts.probe, module ?? artifacts.module, "sequence"] + steps
            let result = try runCommand(
                command[0], Array(command.dropFirst()),
                environment: ["HTTPDNSD_SOCKET": daemon.socketPath, "PATH": "/usr/bin:/bin"], timeout: 120)
            return NSSHostsMapTests.fields(result.stdout)
        }

        /// The daemon's cache lookups so far (hits and misses): unchanged while the map answers.
        func daemonLookups() throws -> Int {
            let reply = try daemon.connect().call("statistics")
            let cache = reply?["result"]?["cache"]
            return (Int(cache?["hits"]?.encodedString ?? "") ?? -1_000_000)
                + (Int(cache?["misses"]?.encodedString ?? "") ?? -1_000_000)
        }

        /// Upstream requests for one name so far.
        func upstreamRequests(for host: String) -> Int {
            upstream.requests.filter { $0.queryValue("host") == host }.count
        }
    }

    /// nss_probe's lines as key=value fields, one dictionary per line.
    static func fields(_ output: String) -> [[String: String]] {
        output.split(separator: "\n").map { line in
            var fields: [String: String] = [:]
            for pair in line.split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            return fields
        }
    }

    // MARK: SipHash

    /// The reference vectors (key 00..0f, messages 00, 00 01, ...) for SipHash-2-4-64, the first
    /// of SipHash-2-4-128's, and libsodium's crypto_shorthash_siphashx24 (SipHash-2-4-128) for
    /// every length to 63.
    @Test func sipHashMatchesTheReferenceVectors() throws {
        let key = (0..<16).map { UInt8($0) }
        func message(_ length: Int) -> [UInt8] { (0..<length).map { UInt8($0) } }
        let vectors64: [Int: UInt64] = [
            0: 0x726f_db47_dd0e_0e31, 1: 0x74f8_39c5_93dc_67fd, 15: 0xa129_ca61_49be_45e5, 63: 0x958a_324c_eb06_4572,
        ]
        for (length, expected) in vectors64 {
            #expect(hosts_map_siphash64(key, message(length), length) == expected, "length \(length)")
        }
        func siphash128(_ length: Int) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 16)
            hosts_map_siphash128(key, message(length), length, &out)
            return out
        }
        #expect(
            siphash128(0) == [
                0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93,
            ])
        let sodium = try #require(dlopen("libsodium.so.23", RTLD_NOW), "libsodium (libsodium-dev) is installed")
        defer { dlclose(sodium) }
        typealias ShortHash =
            @convention(c) (
                UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>, UInt64, UnsafePointer<UInt8>
            ) -> Int32
        let symbol = try #require(dlsym(sodium, "crypto_shorthash_siphashx24"))
        let reference = unsafeBitCast(symbol, to: ShortHash.self)
        for length in 0..<64 {
            var expected = [UInt8](repeating: 0, count: 16)
            var input = message(length) + [0]
            _ = reference(&expected, &input, UInt64(length), key)
            #expect(siphash128(length) == expected, "length \(length)")
        }
    }

    // MARK: against the real daemon

    /// A process's first lookup reaches the daemon (which publishes the answer and hands the
    /// process its uid's key); its later lookups of published answers come from the map: the same
    /// answers, and the daemon counts no lookup. A family without an address is NO_DATA from the
    /// map as from the socket.
    @Test func repeatedLookupsAreAnsweredFromTheMap() throws {
        let setup = try Setup()
        let before = try setup.daemonLookups()
        let results = try setup.sequence(
            Array(repeating: "name4:dual.map.test", count: 4) + Array(repeating: "name3-inet6:four.map.test", count: 3)
                + Array(repeating: "name3-inet:four.map.test", count: 3))
        #expect(results.count == 10)
        #expect(Files.exists(setup.mapPath))
        #expect(try setup.daemonLookups() == before + 3, "one daemon lookup per name and family: \(results)")
        #expect(setup.upstreamRequests(for: "dual.map.test") == 1)
        for dual in results.prefix(4) {
            #expect(dual["status"] == "SUCCESS" && dual["addresses"] == "127.0.0.25,fd00::25", "\(dual)")
            #expect(dual["name"] == "dual.map.test" && dual["errno"] == "untouched")
            let ttl = Int(dual["ttl"] ?? "") ?? -1
            #expect(ttl > 290 && ttl <= 300, "\(dual)")
        }
        for noV6 in results[4..<7] {
            #expect(noV6["status"] == "NOTFOUND" && noV6["h_errno"] == "NO_DATA", "\(noV6)")
        }
        for v4 in results[7..<10] {
            #expect(v4["addresses"] == "127.0.0.31,127.0.0.32" && v4["canon"] == "four.map.test", "\(v4)")
        }

        // Not canonical (capitals, a trailing dot): the socket answers, the same addresses.
        let counted = try setup.daemonLookups()
        let capitals = try setup.sequence(["name4:dual.map.test", "name4:DUAL.map.test."])
        #expect(capitals.last?["addresses"] == "127.0.0.25,fd00::25", "\(capitals) \(setup.daemon.log)")
        #expect(try setup.daemonLookups() == counted + 2)
    }

    /// Every buffer size, threads and fork(2) on answers from the map: each check makes hundreds
    /// of lookups, the daemon sees only the first few.
    @Test func buffersThreadsAndForkOnTheMap() throws {
        let setup = try Setup()
        _ = try setup.sequence(["name4:dual.map.test", "name3-inet:four.map.test"])
        for (check, atMost) in [
            (["check-threads", "name4", "dual.map.test", "8", "200"], 9),
            (["check-fork", "name4", "dual.map.test"], 2), (["check-preallocated", "dual.map.test"], 2),
            (["check-buffers", "name4", "dual.map.test"], 40), (["check-buffers", "name3-inet", "four.map.test"], 40),
        ] {
            let before = try setup.daemonLookups()
            let result = try setup.artifacts.probe(check, socket: setup.daemon.socketPath)
            #expect(result.status == 0, "\(check): \(result.stdout)\(result.stderr)")
            let reached = try setup.daemonLookups() - before
            #expect(reached >= 1 && reached <= atMost, "\(check): \(reached) lookups reached the daemon")
        }
    }

    /// Another uid's lookups never use root's records (nor root's key): its first lookup reaches
    /// the daemon, so its address memory (reverse lookups, cookie normalization) holds the name;
    /// its later ones come from the map.
    @Test(.enabled(if: getuid() == 0, "needs root to act as uid 65534"))
    func eachUidsFirstLookupReachesTheDaemon() throws {
        let setup = try Setup()
        _ = try setup.daemon.directory.shareWithAllUsers()
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: setup.daemon.socketPath)
        let shared = try setup.daemon.directory.shareWithAllUsers([setup.artifacts.module, setup.artifacts.probe])
        _ = try setup.sequence(["name4:dual.map.test", "name4:four.map.test"])
        let before = try setup.daemonLookups()
        let nobodys = try setup.sequence(
            ["name4:four.map.test"] + Array(repeating: "name4:dual.map.test", count: 3) + ["addr2:127.0.0.25"],
            prefix: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], probe: shared[1],
            module: shared[0])
        #expect(nobodys.count == 5 && nobodys[1]["addresses"] == "127.0.0.25,fd00::25", "\(nobodys)")
        #expect(try setup.daemonLookups() == before + 2, "nobody's first lookup of each name reached the daemon")
        #expect(nobodys.last?["status"] == "SUCCESS" && nobodys.last?["name"] == "dual.map.test", "\(nobodys)")
    }

    /// flushCache and a reload each take the answers out of the map before they are acknowledged:
    /// a process that kept its key and mapping reaches the daemon again right after.
    @Test func flushAndReloadEmptyTheMap() throws {
        let setup = try Setup()
        let flushed = setup.daemon.directory.file("flushed"), reloaded = setup.daemon.directory.file("reloaded")
        let before = try setup.daemonLookups()
        let reader = try setup.background([
            "name4:dual.map.test", "name4:dual.map.test", "wait:" + flushed, "name4:dual.map.test",
            "name4:dual.map.test", "wait:" + reloaded, "name4:dual.map.test", "name4:dual.map.test",
            "name4:dual.map.test", "name4:dual.map.test",
        ])
        func lines() -> Int { reader.lines().count }
        #expect(eventually(30) { lines() >= 2 })
        #expect(try setup.daemonLookups() == before + 1)

        _ = try setup.daemon.connect().call("flushCache")
        _ = FileManager.default.createFile(atPath: flushed, contents: nil)
        #expect(eventually(30) { lines() >= 4 })
        #expect(try setup.daemonLookups() == before + 2, "after flushCache one lookup reached the daemon")

        #expect(setup.daemon.reload(count: 1), "\(setup.daemon.log)")
        _ = FileManager.default.createFile(atPath: reloaded, contents: nil)
        #expect(reader.process.wait(timeout: 30) == 0)
        let afterReload = try setup.daemonLookups()
        #expect(afterReload == before + 3, "after the reload one lookup reached the daemon: \(afterReload - before)")
        let answers = reader.lines()
        #expect(answers.count == 8 && answers.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(answers)")
    }

    /// A reload that changes `HostsMapSize=` replaces the map with one of the new size: a process
    /// holding the old mapping sees it retired, asks the daemon once, then reads the new map. A
    /// reload that keeps the size keeps the file (emptied, as every reload empties it).
    @Test func aReloadThatResizesTheMapReplacesItUnderItsReaders() throws {
        let setup = try Setup(extraConfig: "[Server]\nHostsMapSize=64\n")
        let start = try setup.daemonLookups()
        let resized = setup.daemon.directory.file("resized")
        let reader = try setup.background(
            ["name4:dual.map.test", "name4:dual.map.test", "wait:" + resized]
                + Array(repeating: "name4:dual.map.test", count: 3))
        #expect(eventually(30) { reader.lines().count >= 2 })
        let small = try FileManager.default.attributesOfItem(atPath: setup.mapPath)
        let before = try setup.daemonLookups()
        #expect(before == start + 1, "the second lookup came from the map")

        try setup.reload(extraConfig: "[Server]\nHostsMapSize=256\n", count: 1)
        let large = try FileManager.default.attributesOfItem(atPath: setup.mapPath)
        #expect((large[.size] as? Int ?? 0) > (small[.size] as? Int ?? 0), "\(small) -> \(large)")
        #expect(large[.systemFileNumber] as? Int != small[.systemFileNumber] as? Int, "a new file")
        _ = FileManager.default.createFile(atPath: resized, contents: nil)
        #expect(reader.process.wait(timeout: 30) == 0)
        let answers = reader.lines()
        #expect(answers.count == 5 && answers.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(answers)")
        #expect(try setup.daemonLookups() == before + 1, "one lookup after the resize reached the daemon")

        try setup.reload(extraConfig: "[Server]\nHostsMapSize=256\n", count: 2)
        let kept = try FileManager.default.attributesOfItem(atPath: setup.mapPath)
        #expect(kept[.systemFileNumber] as? Int == large[.systemFileNumber] as? Int, "the same file")
        let again = try setup.sequence(Array(repeating: "name4:dual.map.test", count: 3))
        #expect(again.count == 3 && again.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(again)")
        #expect(try setup.daemonLookups() == before + 2, "emptied by the reload, then answered from the map")

        try setup.reload(extraConfig: "[Server]\nHostsMapSize=0\n", count: 3)
        #expect(!Files.exists(setup.mapPath), "no map is left behind")
        let counted = try setup.daemonLookups()
        let without = try setup.sequence(Array(repeating: "name4:dual.map.test", count: 3))
        #expect(without.count == 3 && without.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(without)")
        #expect(try setup.daemonLookups() == counted + 3, "HostsMapSize=0: every lookup asks the daemon")
    }

    /// A network change (`OnNetworkChange=refresh`, the default) takes the answers out of the map:
    /// a process that kept its mapping reaches the daemon again, which serves the marked answer and
    /// refreshes it. The daemon and its upstream run in a network namespace of the test's own.
    @Test(.enabled(if: getuid() == 0, "creating a network namespace needs root"))
    func aNetworkChangeTakesTheAnswersOutOfTheMap() throws {
        let namespace = try NetworkNamespace(directory: TemporaryDirectory())
        defer { namespace.stop() }
        let setup = try Setup(namespace: namespace)
        let changed = setup.daemon.directory.file("changed")
        let reader = try setup.background(
            ["name4:dual.map.test", "name4:dual.map.test", "wait:" + changed]
                + Array(repeating: "name4:dual.map.test", count: 3))
        #expect(eventually(30) { reader.lines().count >= 2 })
        let before = try setup.daemonLookups()
        #expect(setup.upstreamRequests(for: "dual.map.test") == 1)

        let added = try namespace.run(["/usr/sbin/ip", "addr", "add", "10.9.9.9/32", "dev", "lo"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(eventually(30) { setup.daemon.log.contains("Network changed") }, "\(setup.daemon.log)")
        _ = FileManager.default.createFile(atPath: changed, contents: nil)
        #expect(reader.process.wait(timeout: 30) == 0)
        let answers = reader.lines()
        #expect(answers.count == 5 && answers.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(answers)")
        #expect(try setup.daemonLookups() >= before + 1, "after the change the map did not answer")
        #expect(eventually(20) { setup.upstreamRequests(for: "dual.map.test") >= 2 }, "refreshed upstream")
    }

    /// The file holds no cached name and none of its addresses, in text or in binary.
    @Test func theMapHoldsNoNameOrAddressInClear() throws {
        let setup = try Setup()
        var steps: [String] = []
        for name in Self.answers.keys.sorted() { steps += ["name4:" + name, "name3-inet:" + name, "name4:" + name] }
        let results = try setup.sequence(steps)
        #expect(results.count == steps.count)
        let file = try #require(FileManager.default.contents(atPath: setup.mapPath))
        let bytes = [UInt8](file)
        func contains(_ needle: [UInt8]) -> Bool { file.range(of: Data(needle)) != nil }
        var needles: [String: [UInt8]] = [:]
        for (name, answer) in Self.answers {
            needles[name] = Array(name.utf8)
            needles[name.uppercased()] = Array(name.uppercased().utf8)
            for label in name.split(separator: ".") where label.count > 3 { needles[String(label)] = Array(label.utf8) }
            for address in answer.v4 + answer.v6 {
                needles[address] = Array(address.utf8)
                var binary = [UInt8](repeating: 0, count: 16)
                let family = address.contains(":") ? AF_INET6 : AF_INET
                #expect(inet_pton(family, address, &binary) == 1)
                needles["binary " + address] = Array(binary.prefix(family == AF_INET ? 4 : 16))
            }
        }
        for (what, needle) in needles {
            #expect(!contains(needle), "the map holds \(what)")
        }
        #expect(bytes.count == 128 + 8192 * 176, "the default HostsMapSize=")
    }

    /// Stopped, the daemon's answers are still served from the map until they expire, then the
    /// lookup takes the socket path: no daemon, UNAVAIL for the next source.
    @Test func aStoppedDaemonsAnswersLastUntilTheyExpire() throws {
        let setup = try Setup()
        let killed = setup.daemon.directory.file("killed")
        let reader = try setup.background([
            "name3-inet:brief.map.test", "name3-inet:dual.map.test", "wait:" + killed, "name3-inet:brief.map.test",
            "sleep:3500", "name3-inet:brief.map.test", "name3-inet:dual.map.test", "name3-inet:four.map.test",
        ])
        #expect(eventually(30) { reader.lines().count >= 2 })
        let answered = MonotonicClock.nowNanoseconds()
        setup.daemon.signal(SIGKILL)
        #expect(setup.daemon.waitForExit(timeout: 10) != nil)
        _ = FileManager.default.createFile(atPath: killed, contents: nil)
        #expect(reader.process.wait(timeout: 60) == 0)
        let results = reader.lines()
        #expect(results.count == 6, "\(results)")
        guard results.count == 6 else { return }
        // Three seconds of TTL: only a machine stalled for seconds gets to the next lookup past them.
        if MonotonicClock.nowNanoseconds() - answered < 2_000_000_000 || results[2]["status"] == "SUCCESS" {
            #expect(results[2]["addresses"] == "127.0.0.41", "from the map, the daemon gone: \(results[2])")
        }
        #expect(results[3]["status"] == "UNAVAIL" && results[3]["errno"] == "ECONNREFUSED", "expired: \(results[3])")
        #expect(results[4]["addresses"] == "127.0.0.25", "300 s still to go: \(results[4])")
        #expect(results[5]["status"] == "UNAVAIL", "never asked: \(results[5])")
    }

    /// A process in another time namespace sees another CLOCK_MONOTONIC: it never reads the map
    /// (the socket answers each lookup, the same addresses).
    @Test(.enabled(if: getuid() == 0, "unshare --time needs root"))
    func anotherTimeNamespaceUsesTheSocket() throws {
        let setup = try Setup()
        _ = try setup.sequence(["name4:dual.map.test"])
        let before = try setup.daemonLookups()
        let results = try setup.sequence(
            Array(repeating: "name4:dual.map.test", count: 3),
            prefix: ["/usr/bin/unshare", "--time", "--monotonic", "100000"])
        #expect(results.count == 3 && results.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" }, "\(results)")
        #expect(try setup.daemonLookups() == before + 3, "each lookup in another time namespace reached the daemon")
        let here = try setup.sequence(Array(repeating: "name4:dual.map.test", count: 3))
        #expect(here.count == 3)
        #expect(try setup.daemonLookups() == before + 4, "in the daemon's namespace only the first")
    }

    /// The map replaced under readers by a truncated, zeroed, grown, loosely permitted or valid
    /// file (each time the old one marked retired, as the daemon marks the one it replaces):
    /// every answer the readers get is right, and a map that is not one is never read.
    @Test func replacedMapsUnderReaders() throws {
        let setup = try Setup()
        _ = try setup.sequence(["name4:dual.map.test"])
        let valid = try #require(FileManager.default.contents(atPath: setup.mapPath))
        let variants: [(String, Data, mode_t)] = [
            ("truncated", valid.prefix(valid.count / 2), 0o644), ("zeroed", Data(count: valid.count), 0o644),
            ("grown", valid + Data(count: 4096), 0o644), ("writable by others", valid, 0o666),
            ("header only", valid.prefix(128), 0o644), ("valid", valid, 0o644),
        ]
        // Alone: what reaches the daemon is this process's doing.
        for (what, content, mode) in variants {
            try replaceMap(at: setup.mapPath, with: content, mode: mode)
            let before = try setup.daemonLookups()
            let answers = try setup.sequence(Array(repeating: "name4:dual.map.test", count: 3))
            #expect(
                answers.count == 3 && answers.allSatisfy { $0["addresses"] == "127.0.0.25,fd00::25" },
                "with a \(what) map: \(answers)")
            // The valid copy was written by the daemon (the same keys): its answers are read.
            let reached = try setup.daemonLookups() - before
            #expect(what == "valid" ? reached == 1 : reached == 3, "a \(what) map: \(reached) reached the daemon")
        }
        // Under readers in four threads of a process that keeps its mappings and key throughout.
        let readersOutput = setup.daemon.directory.file("readers.out")
        let readers = try ChildProcess(
            setup.artifacts.probe, [setup.artifacts.module, "check-threads", "name4", "dual.map.test", "4", "300"],
            environment: ["HTTPDNSD_SOCKET": setup.daemon.socketPath, "PATH": "/usr/bin:/bin"],
            stdout: readersOutput, stderr: readersOutput)
        for _ in 0..<3 {
            for (what, content, mode) in variants where readers.isRunning {
                try replaceMap(at: setup.mapPath, with: content, mode: mode)
                let answer = try setup.sequence(["name4:dual.map.test"])
                #expect(answer.first?["addresses"] == "127.0.0.25,fd00::25", "with a \(what) map: \(answer)")
            }
        }
        #expect(
            readers.wait(timeout: 120) == 0, "\((try? String(contentsOfFile: readersOutput, encoding: .utf8)) ?? "")")
    }

    /// Puts `content` at `path` by rename, then marks the file it replaced retired.
    private func replaceMap(at path: String, with content: Data, mode: mode_t) throws {
        let old = open(path, O_RDWR | O_CLOEXEC)
        defer { if old >= 0 { close(old) } }
        let temporary = path + ".test"
        try content.write(to: URL(fileURLWithPath: temporary))
        #expect(chmod(temporary, mode) == 0)
        #expect(rename(temporary, path) == 0)
        var retired: UInt32 = 1
        // struct hosts_map_header's retired word.
        #expect(old < 0 || pwrite(old, &retired, 4, 36) == 4)
    }

    // MARK: the torture

    /// A writer publishing, flushing and recycling as fast as it can while 16 reader threads in
    /// four processes check every answer (Tests/nss/map_torture.c).
    @Test func tortureUnderConcurrentWrites() throws {
        let root = BuiltProducts.packageRoot
        let directory = TemporaryDirectory(prefix: "torture")
        let program = directory.file("map_torture")
        let compile = try runCommand(
            "/usr/bin/gcc",
            [
                "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-pthread",
                "-I", root + "/Sources/CHTTPDNSHostsMap/include", "-I", root + "/Sources/nss_httpdns",
                "-o", program, root + "/Tests/nss/map_torture.c", root + "/Sources/nss_httpdns/map_lookup.c",
                root + "/Sources/nss_httpdns/daemon_call.c", root + "/Sources/CHTTPDNSHostsMap/hosts_map_reader.c",
                root + "/Sources/CHTTPDNSHostsMap/hosts_map_writer.c", root + "/Sources/CHTTPDNSHostsMap/siphash.c",
            ])
        #expect(compile.status == 0, "\(compile.stderr)")
        let result = try runCommand(
            program, [directory.path, "4", "4", "4"],
            environment: ["HTTPDNSD_SOCKET": directory.file("httpdnsd.sock")], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        var counts: [String: Int] = [:]
        for pair in result.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { counts[String(parts[0])] = Int(parts[1]) }
        }
        #expect(counts["invalid"] == 0)
        #expect((counts["hits"] ?? 0) > 100, "the readers were answered from the map: \(result.stdout)")
        #expect((counts["flushes"] ?? 0) > 0 && (counts["recycles"] ?? 0) > 0, "\(result.stdout)")
    }
}
