import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Unmodified programs (getent, Python, curl) resolving through the module in a private mount
/// namespace, against the real daemon whose upstream is a fake Alibaba HTTPDNS service on
/// 127.0.0.1 that maps names to 127.0.0.x.
@Suite(.serialized, .enabled(if: runsAsRoot, "mounts in a private namespace: needs root"))
struct NSSProgramsTests {
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "web.nss.test": (["127.0.0.1"], [], 300),
        "alpha.nss.test": (["127.0.0.21"], [], 300),
        "beta.nss.test": (["127.0.0.22", "127.0.0.23"], [], 300),
        "gamma.nss.test": ([], ["fd00::24"], 300),
        "dual.nss.test": (["127.0.0.25"], ["fd00::25"], 300),
        "missing.nss.test": ([], [], 60),
        "onlyfiles.nss.test": ([], [], 60),
    ]

    /// The recommended line, with a second "files" where a real system would have "dns": the tests
    /// never reach a real DNS server.
    static let recommendedLine = "files httpdns [!UNAVAIL=return] files"
    static let plainHosts = "127.0.0.1 localhost\n::1 localhost\n127.0.0.99 fallback.nss.test\n"

    /// The daemon on a fake upstream, its socket named as the system socket is.
    struct Setup {
        let upstream: FakeHTTPServer
        let daemon: DaemonHarness
        let artifacts: NSSArtifacts

        /// `config` replaces the configuration; `resolverLines` are added to the default one's
        /// `[Resolver]` section (after its `Upstream=alibaba` line, named `alibaba`, and its route
        /// of `routed`: a billed service gets no name outside the routes from the module).
        init(
            launcher: (TemporaryDirectory) throws -> [String] = { _ in [] }, config: String? = nil,
            resolverLines: String = "", routed: String = "nss.test"
        ) throws {
            artifacts = try NSSArtifacts.get()
            upstream = try FakeHTTPServer.alibaba(answers: NSSProgramsTests.answers)
            let directory = TemporaryDirectory(prefix: "nssd")
            daemon = try DaemonHarness(
                config: config
                    ?? "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n"
                    + (routed.isEmpty ? "" : "Route=alibaba \(routed)\n") + resolverLines,
                environment: ["LD_LIBRARY_PATH": artifacts.moduleDirectory], directory: directory,
                socketName: "httpdnsd.sock", launcher: try launcher(directory))
            _ = try daemon.connectReady()
        }

        func namespace(_ nsswitchHosts: String, hosts: String = NSSProgramsTests.plainHosts, daemonUp: Bool = true)
            throws -> ResolverNamespace
        {
            try ResolverNamespace(
                nsswitchHosts: nsswitchHosts, hosts: hosts, daemonDirectory: daemonUp ? daemon.directory.path : nil,
                artifacts: artifacts)
        }

        /// Upstream requests for one name so far.
        func upstreamRequests(for host: String) -> Int {
            upstream.requests.filter { $0.queryValue("host") == host }.count
        }
    }

    /// `getent` output as lines of whitespace-separated words.
    static func rows(_ result: CommandResult) -> [[String]] {
        result.stdout.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        }
    }

    /// The packaged line's order (the module, then the machine's other sources) with only a
    /// billed upstream and no route: a name the machine's own sources know (here /etc/hosts,
    /// standing in for DNS) resolves as before the module was installed, and the billed service
    /// never hears of it; it would have answered it empty, a final NOTFOUND.
    @Test func namesOutsideTheRoutesNeverReachABilledService() throws {
        let setup = try Setup(routed: "")
        let space = try setup.namespace("httpdns [!UNAVAIL=return] files", hosts: "127.0.0.77 mirror.example.test\n")
        let mirror = try space.run("getent", ["ahosts", "mirror.example.test"])
        #expect(mirror.status == 0, "\(mirror.stderr)")
        #expect(Self.rows(mirror).first == ["127.0.0.77", "STREAM", "mirror.example.test"], "\(mirror.stdout)")
        #expect(setup.upstreamRequests(for: "mirror.example.test") == 0, "the billed service never heard of it")
        // A program's own RPC resolve still asks it (and the daemon warns of the configuration).
        _ = try setup.daemon.connect().call("resolve", ["host": "web.nss.test", "family": "ipv4"])
        #expect(setup.upstreamRequests(for: "web.nss.test") == 1)
        #expect(setup.daemon.log.contains("goes to the billed upstream(s) alibaba"), "\(setup.daemon.log)")
    }

    /// A paid Tencent upstream (DES-encrypted names, Tests/fakes/tencent_paid.py) behind the
    /// packaged line, also the default route: a routed name resolves through it, one outside the
    /// routes through the machine's own sources, and the billed service never hears of that one.
    @Test func aDESTencentUpstreamAnswersTheRoutedNamesOnly() throws {
        let fake = try FakeTencentPaid(
            answers: ["alpha.nss.test": .init(v4: ["127.0.0.21"], v6: [], ttl: 300)],
            arguments: ["--des-key", "nss-des8", "--auth-id", "77"])
        let setup = try Setup(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nRoute=tencent nss.test\n"
                + "DefaultRoute=tencent\nTencentAuthId=77\nTencentKey=nss-des8\n")
        try Self.expectTheRoutedNameFromTheDaemonAndTheOtherFromFiles(setup)
        let requests = fake.requests
        #expect(requests.map(\.names) == [["alpha.nss.test"]], "\(requests.map(\.names))")
        #expect(requests.allSatisfy { $0.alg == "des" && $0.status == 200 })
    }

    /// Under `hosts: httpdns [!UNAVAIL=return] files`, the routed alpha.nss.test comes from the
    /// daemon (127.0.0.21) and mirror.example.test, outside the routes, from /etc/hosts.
    static func expectTheRoutedNameFromTheDaemonAndTheOtherFromFiles(_ setup: Setup) throws {
        let space = try setup.namespace("httpdns [!UNAVAIL=return] files", hosts: "127.0.0.77 mirror.example.test\n")
        let alpha = try space.run("getent", ["ahostsv4", "alpha.nss.test"])
        #expect(rows(alpha).first == ["127.0.0.21", "STREAM", "alpha.nss.test"], "\(alpha.stdout)\(alpha.stderr)")
        let mirror = try space.run("getent", ["ahosts", "mirror.example.test"])
        #expect(rows(mirror).first == ["127.0.0.77", "STREAM", "mirror.example.test"], "\(mirror.stdout)")
    }

    /// Alibaba v2 with the AES key (m=2) through the NSS module: the routed name is answered from
    /// the fake's encrypted answer; the one outside the routes never reaches the service.
    @Test func anEncryptedAlibabaV2UpstreamAnswersTheRoutedNamesOnly() throws {
        let secret = "5f3c9a0e1b2d4c6e8f0a1b2c3d4e5f60"
        let aesKey = "8c1f0e2d3b4a59687766554433221100"
        let fake = try FakeAlibabaV2(
            answers: ["alpha.nss.test": .init(v4: ["127.0.0.21"], v6: [], ttl: 300)],
            arguments: ["--account", "139450", "--secret", secret, "--aes-key", aesKey])
        let setup = try Setup(
            config: "[Resolver]\nUpstream=alibaba http://127.0.0.1:\(fake.port)/139450\nRoute=alibaba nss.test\n"
                + "DefaultRoute=alibaba\nAlibabaAPI=v2\nSecretKey=\(secret)\nAlibabaAESKey=\(aesKey)\n")
        try Self.expectTheRoutedNameFromTheDaemonAndTheOtherFromFiles(setup)
        let requests = fake.requests
        #expect(requests.map(\.names) == [["alpha.nss.test"]], "\(requests.map(\.query))")
        #expect(requests.allSatisfy { $0.query["m"] == "2" && $0.code == "success" })
    }

    @Test func getentForwardAndReverse() throws {
        let setup = try Setup()
        let space = try setup.namespace(Self.recommendedLine)

        let alpha = try space.run("getent", ["ahosts", "alpha.nss.test"])
        #expect(alpha.status == 0, "\(alpha.stderr)")
        #expect(
            Self.rows(alpha) == [
                ["127.0.0.21", "STREAM", "alpha.nss.test"], ["127.0.0.21", "DGRAM"], ["127.0.0.21", "RAW"],
            ])
        // A second program asking again is a cache hit in the daemon: one upstream query for both.
        #expect(try space.run("getent", ["ahosts", "alpha.nss.test"]).status == 0)
        #expect(setup.upstreamRequests(for: "alpha.nss.test") == 1)

        let dual = try space.run("getent", ["ahosts", "dual.nss.test"])
        #expect(Set(Self.rows(dual).map { $0[0] }) == ["127.0.0.25", "fd00::25"], "\(dual.stdout)")
        #expect(
            Self.rows(try space.run("getent", ["ahostsv4", "dual.nss.test"])).map { $0[0] }
                == Array(repeating: "127.0.0.25", count: 3))
        #expect(
            Self.rows(try space.run("getent", ["ahostsv6", "gamma.nss.test"])).first == [
                "fd00::24", "STREAM", "gamma.nss.test",
            ])
        // AI_V4MAPPED (getent ahostsv6): glibc maps the module's IPv4 answer.
        #expect(
            Self.rows(try space.run("getent", ["ahostsv6", "alpha.nss.test"])).first == [
                "::ffff:127.0.0.21", "STREAM", "alpha.nss.test",
            ])

        // getent hosts: gethostbyname2 for AF_INET6 first (NO_DATA here), then AF_INET.
        let beta = try space.run("getent", ["hosts", "beta.nss.test"])
        #expect(Self.rows(beta).first == ["127.0.0.22", "beta.nss.test"], "\(beta.stdout)")
        #expect(Self.rows(try space.run("getent", ["hosts", "gamma.nss.test"])) == [["fd00::24", "gamma.nss.test"]])

        let missing = try space.run("getent", ["ahosts", "missing.nss.test"])
        #expect(missing.status == 2 && missing.stdout.isEmpty)
        // files comes first and still answers what it knows.
        #expect(Self.rows(try space.run("getent", ["ahosts", "fallback.nss.test"])).first?.first == "127.0.0.99")

        // Reverse: this uid's memory of what the daemon handed out.
        #expect(Self.rows(try space.run("getent", ["hosts", "127.0.0.23"])) == [["127.0.0.23", "beta.nss.test"]])
        #expect(Self.rows(try space.run("getent", ["hosts", "fd00::25"])) == [["fd00::25", "dual.nss.test"]])
        let unknown = try space.run("getent", ["hosts", "127.0.0.88"])
        #expect(unknown.status == 2 && unknown.stdout.isEmpty)
    }

    /// Reverse lookups answer from the calling uid's own memory: an address only root's resolve
    /// learnt is unknown to uid 65534 (nobody), and the other way round. Each uid also finds its
    /// own, which shows the module reached the daemon for both.
    @Test func reverseLookupsArePerUser() throws {
        let setup = try Setup()
        // Let nobody through to the socket (as an installed daemon's 0666 socket would).
        _ = try setup.daemon.directory.shareWithAllUsers()
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: setup.daemon.socketPath)
        let space = try setup.namespace(Self.recommendedLine)
        func asNobody(_ arguments: [String]) throws -> CommandResult {
            try space.run(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "getent"] + arguments)
        }

        #expect(try space.run("getent", ["ahosts", "alpha.nss.test"]).status == 0)
        let nobodysOwn = try asNobody(["ahosts", "dual.nss.test"])
        #expect(nobodysOwn.status == 0, "\(nobodysOwn.stderr)")

        #expect(Self.rows(try space.run("getent", ["hosts", "127.0.0.21"])) == [["127.0.0.21", "alpha.nss.test"]])
        let rootsAddress = try asNobody(["hosts", "127.0.0.21"])
        #expect(rootsAddress.status == 2 && rootsAddress.stdout.isEmpty, "\(rootsAddress.stdout)")

        #expect(Self.rows(try asNobody(["hosts", "127.0.0.25"])) == [["127.0.0.25", "dual.nss.test"]])
        let nobodysAddress = try space.run("getent", ["hosts", "127.0.0.25"])
        #expect(nobodysAddress.status == 2 && nobodysAddress.stdout.isEmpty, "\(nobodysAddress.stdout)")
    }

    @Test func pythonGetaddrinfoFromSixteenThreads() throws {
        let setup = try Setup()
        let space = try setup.namespace(Self.recommendedLine)
        // missing.nss.test: Alibaba's empty lists, which the daemon reads as no-data (EAI_NODATA).
        let expected: JSON = [
            "alpha.nss.test": ["inet 127.0.0.21"], "beta.nss.test": ["inet 127.0.0.22", "inet 127.0.0.23"],
            "gamma.nss.test": ["inet6 fd00::24"], "dual.nss.test": ["inet 127.0.0.25", "inet6 fd00::25"],
            "missing.nss.test": ["EAI_NODATA"], "fallback.nss.test": ["inet 127.0.0.99"],
        ]
        func daemonLookups() throws -> Int {
            let cache = try setup.daemon.connect().call("statistics")?["result"]?["cache"]
            return (Int(cache?["hits"]?.encodedString ?? "") ?? 0) + (Int(cache?["misses"]?.encodedString ?? "") ?? 0)
        }
        let before = try daemonLookups()
        let result = try space.run(
            "/usr/bin/python3",
            [BuiltProducts.packageRoot + "/Tests/nss/getaddrinfo_threads.py", expected.encodedString, "16", "20"],
            environment: ["PYTHONDONTWRITEBYTECODE": "1"], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let summary = try JSONParser.parse(result.stdout)
        #expect(summary["threads"] == 16)
        #expect(summary["lookups"] == .int(16 * 20 * 6))
        #expect(summary["mismatches"] == [])
        // One process: after its first answers, the hosts map answers the repeats (1600 lookups
        // of the module's five names; the daemon sees a few per name while the first are in flight).
        let reached = try daemonLookups() - before
        #expect(reached > 0 && reached < 400, "\(reached) of the lookups reached the daemon")
    }

    /// A name that exists without an address of the family asked for (the daemon's -32001
    /// no-data) is NO_DATA, and getaddrinfo's EAI_NODATA, as nss_dns says NODATA; a name that does
    /// not exist (no-such-name, NXDOMAIN) is HOST_NOT_FOUND, EAI_NONAME. A DoH JSON upstream,
    /// which tells the two apart (Alibaba's answers cannot).
    @Test func noDataAndNoSuchNameAreTheErrorsNSSDNSGives() throws {
        let upstream = try FakeHTTPServer.dohJSON(
            zone: FakeDNSZone(
                records: [
                    FakeDNSRecord("four.nss.test", ttl: 300, .a("127.0.0.31")),
                    FakeDNSRecord("text.nss.test", ttl: 300, .other(type: 16, rdata: Array("\u{4}text".utf8))),
                ], nonexistent: ["nowhere.nss.test"]))
        let setup = try Setup(config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\n")
        let space = try setup.namespace("httpdns")
        // gethostbyname2 through ctypes: Python's own gethostbyname_ex asks getaddrinfo first.
        let script = """
            import ctypes, json, socket
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.gethostbyname2.restype = ctypes.c_void_p
            libc.__h_errno_location.restype = ctypes.POINTER(ctypes.c_int)
            def gai(name, family):
                try:
                    socket.getaddrinfo(name, None, family, socket.SOCK_STREAM)
                    return "resolved"
                except socket.gaierror as error:
                    return [{socket.EAI_NONAME: "EAI_NONAME", socket.EAI_NODATA: "EAI_NODATA"}.get(error.errno,
                        error.errno), error.strerror]
            def ghbn(name):
                if libc.gethostbyname2(name.encode(), socket.AF_INET):
                    return "resolved"
                h_errno = libc.__h_errno_location().contents.value
                return {1: "HOST_NOT_FOUND", 4: "NO_DATA"}.get(h_errno, h_errno)
            print(json.dumps({
                "four inet": gai("four.nss.test", socket.AF_INET), "four inet6": gai("four.nss.test", socket.AF_INET6),
                "text unspec": gai("text.nss.test", socket.AF_UNSPEC),
                "nowhere unspec": gai("nowhere.nss.test", socket.AF_UNSPEC),
                "nowhere inet6": gai("nowhere.nss.test", socket.AF_INET6),
                "text gethostbyname": ghbn("text.nss.test"), "nowhere gethostbyname": ghbn("nowhere.nss.test"),
            }))
            """
        let result = try space.run("/usr/bin/python3", ["-c", script], environment: ["PYTHONDONTWRITEBYTECODE": "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let answers = try JSONParser.parse(result.stdout)
        let noData: JSON = ["EAI_NODATA", "No address associated with hostname"]
        let noName: JSON = ["EAI_NONAME", "Name or service not known"]
        #expect(answers["four inet"] == "resolved", "\(result.stdout)")
        #expect(answers["four inet6"] == noData, "\(result.stdout)")
        #expect(answers["text unspec"] == noData, "\(result.stdout)")
        #expect(answers["nowhere unspec"] == noName, "\(result.stdout)")
        #expect(answers["nowhere inet6"] == noName, "\(result.stdout)")
        #expect(answers["text gethostbyname"] == "NO_DATA", "\(result.stdout)")
        #expect(answers["nowhere gethostbyname"] == "HOST_NOT_FOUND", "\(result.stdout)")
    }

    @Test func curlReachesALoopbackServerByName() throws {
        let server = try FakeHTTPServer { request in .text("hello from \(request.header("Host") ?? "?")") }
        let setup = try Setup()
        let space = try setup.namespace(Self.recommendedLine)
        let url = "http://web.nss.test:\(server.port)/page"
        let result = try space.run(
            "curl", ["-sS", "--noproxy", "*", "--max-time", "20", "-w", "\n%{remote_ip}", url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "hello from web.nss.test:\(server.port)\n127.0.0.1")
        #expect(server.requests.first?.path == "/page")
        #expect(setup.upstreamRequests(for: "web.nss.test") == 1)
    }

    /// [!UNAVAIL=return]: the daemon's "not found" is final, its absence hands over to the next source.
    @Test func fallbackWhenTheDaemonIsStopped() throws {
        let setup = try Setup()
        let hosts = Self.plainHosts + "127.0.0.99 web.nss.test\n127.0.0.98 onlyfiles.nss.test\n"
        let line = "httpdns [!UNAVAIL=return] files"
        let up = try setup.namespace(line, hosts: hosts)
        #expect(Self.rows(try up.run("getent", ["ahosts", "web.nss.test"])).first?.first == "127.0.0.1")
        let final = try up.run("getent", ["ahosts", "onlyfiles.nss.test"])
        #expect(final.status == 2 && final.stdout.isEmpty)
        // An address the daemon never handed out is not its to deny: the next source answers.
        #expect(Self.rows(try up.run("getent", ["hosts", "127.0.0.98"])) == [["127.0.0.98", "onlyfiles.nss.test"]])

        // Stopped: the socket file is still there, nothing listens (ECONNREFUSED).
        setup.daemon.stop()
        #expect(FileManager.default.fileExists(atPath: setup.daemon.socketPath))
        #expect(Self.rows(try up.run("getent", ["ahosts", "web.nss.test"])).first?.first == "127.0.0.99")
        #expect(Self.rows(try up.run("getent", ["ahosts", "onlyfiles.nss.test"])).first?.first == "127.0.0.98")
        #expect(Self.rows(try up.run("getent", ["hosts", "127.0.0.98"])) == [["127.0.0.98", "onlyfiles.nss.test"]])

        // Not installed at all: no socket (ENOENT).
        let gone = try setup.namespace(line, hosts: hosts, daemonUp: false)
        #expect(Self.rows(try gone.run("getent", ["ahosts", "web.nss.test"])).first?.first == "127.0.0.99")
        let python = try gone.run(
            "/usr/bin/python3", ["-c", "import socket; print(socket.gethostbyname('web.nss.test'))"])
        #expect(python.stdout == "127.0.0.99\n", "\(python.stderr)")
    }

    /// A daemon that is there but does not answer (stopped with SIGSTOP) costs each call of the
    /// module its deadline, 2.5 s (the daemon's default Timeout= and a margin), then the next
    /// source answers: `getent ahosts` makes one call, `getent hosts` one per family.
    /// HTTPDNSD_NSS_TIMEOUT shortens it. Real time is what is measured here: the bounds leave
    /// two seconds for starting getent on a loaded machine (the deadline was 5 s: 5 and 10 s).
    @Test func aStoppedDaemonCostsEachCallTheModulesDeadline() throws {
        let setup = try Setup()
        let hosts = Self.plainHosts + "127.0.0.99 web.nss.test\n"
        let space = try setup.namespace("httpdns [!UNAVAIL=return] files", hosts: hosts)
        setup.daemon.signal(SIGSTOP)
        defer { setup.daemon.signal(SIGCONT) }
        func timed(_ arguments: [String], environment: [String: String] = [:]) throws -> (CommandResult, Double) {
            let started = Date()
            let result = try space.run("getent", arguments, environment: environment)
            return (result, Date().timeIntervalSince(started))
        }
        let (ahosts, oneCall) = try timed(["ahosts", "web.nss.test"])
        #expect(Self.rows(ahosts).first?.first == "127.0.0.99")
        #expect(oneCall >= 2.4 && oneCall < 4.5, "getent ahosts took \(oneCall) s")
        let (hostsByFamily, twoCalls) = try timed(["hosts", "web.nss.test"])
        #expect(Self.rows(hostsByFamily).first?.first == "127.0.0.99")
        #expect(twoCalls >= 4.8 && twoCalls < 7.0, "getent hosts took \(twoCalls) s")
        let (short, shortCall) = try timed(["ahosts", "web.nss.test"], environment: ["HTTPDNSD_NSS_TIMEOUT": "500"])
        #expect(Self.rows(short).first?.first == "127.0.0.99")
        #expect(shortCall >= 0.45 && shortCall < 2.5, "with HTTPDNSD_NSS_TIMEOUT=500: \(shortCall) s")
    }

    /// glibc's answers through the module equal its answers through nss_files for the same names
    /// and addresses, under every getaddrinfo hint that matters (families, AI_V4MAPPED, AI_ALL,
    /// AI_ADDRCONFIG, AI_CANONNAME), gethostbyname and gethostbyaddr included.
    @Test func answersEqualNSSFilesForTheSameData() throws {
        let setup = try Setup()
        let names = ["alpha.nss.test", "beta.nss.test", "gamma.nss.test", "dual.nss.test", "missing.nss.test"]
        // Not ::ffff:127.0.0.25: nss_files only finds a mapped address written so in /etc/hosts, the
        // module looks the IPv4 address up (the probe tests check that).
        let addresses = ["127.0.0.21", "127.0.0.22", "127.0.0.23", "fd00::24", "127.0.0.25", "fd00::25", "127.0.0.200"]
        var equivalent = Self.plainHosts
        for name in names.sorted() {
            let answer = try #require(Self.answers[name])
            for address in answer.v4 + answer.v6 { equivalent += "\(address) \(name)\n" }
        }
        let arguments = [BuiltProducts.packageRoot + "/Tests/nss/resolver_matrix.py"] + names + ["--"] + addresses
        // multi on: nss_files returns every line of a name, as the daemon returns every address.
        let environment = ["RESOLV_MULTI": "on", "PYTHONDONTWRITEBYTECODE": "1"]
        let files = try setup.namespace("files", hosts: equivalent).run(
            "/usr/bin/python3", arguments, environment: environment)
        let module = try setup.namespace("httpdns").run("/usr/bin/python3", arguments, environment: environment)
        #expect(files.status == 0 && module.status == 0, "\(files.stderr)\(module.stderr)")
        #expect(module.stdout == files.stdout)
        if module.stdout != files.stdout {
            let a = files.stdout.split(separator: "\n"), b = module.stdout.split(separator: "\n")
            for (x, y) in zip(a, b) where x != y { Issue.record("files: \(x)\nhttpdns: \(y)") }
        }
        #expect(files.stdout.contains("\"127.0.0.25\""))
    }

    /// The daemon started where nsswitch.conf puts httpdns first still answers Upstream=system from
    /// /etc/hosts, without ever loading the module into itself.
    @Test func theDaemonsSystemUpstreamNeverLoopsThroughTheModule() throws {
        let artifacts = try NSSArtifacts.get()
        var space: ResolverNamespace?
        let setup = try Setup(
            launcher: { directory in
                let made = try ResolverNamespace(
                    nsswitchHosts: "httpdns [!UNAVAIL=return] files",
                    hosts: "127.0.0.1 localhost\n127.0.0.41 sys.nss.test\n", daemonDirectory: directory.path,
                    artifacts: artifacts)
                space = made
                return made.launcher
            }, config: "[Resolver]\nUpstream=system\nTimeout=2s\n")
        let client = try setup.daemon.connect()
        let response = try #require(try client.call("resolve", ["host": "sys.nss.test"]))
        let result = try #require(response["result"], "\(response.encodedString)")
        #expect(result["ipv4"] == ["127.0.0.41"])
        #expect(result["source"] == "system")

        let pid = try #require(Self.daemonProcess(under: setup.daemon.process.pid))
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        #expect(!maps.contains("libnss_httpdns"))

        // The same namespace sends every other program through the module.
        let getent = try #require(space).run("getent", ["ahosts", "sys.nss.test"])
        #expect(Self.rows(getent).first == ["127.0.0.41", "STREAM", "sys.nss.test"])
    }

    /// With `Route=` the module's traffic follows the daemon's routes: names under the routed
    /// domain reach the fake HTTPDNS service, every other name goes to the system resolver (here
    /// /etc/hosts of the namespace the daemon runs in) and never reaches the service.
    @Test func namesOutsideTheRoutedDomainsNeverReachTheHTTPDNSService() throws {
        let artifacts = try NSSArtifacts.get()
        var space: ResolverNamespace?
        let hosts = "127.0.0.1 localhost\n127.0.0.51 outside.example\n127.0.0.52 mirror.example.org\n"
        let setup = try Setup(
            launcher: { directory in
                let made = try ResolverNamespace(
                    nsswitchHosts: "httpdns [!UNAVAIL=return] files", hosts: hosts, daemonDirectory: directory.path,
                    artifacts: artifacts)
                space = made
                return made.launcher
            }, resolverLines: "Route=alibaba nss.test\n", routed: "")
        let programs = try #require(space)
        #expect(Self.rows(try programs.run("getent", ["ahostsv4", "alpha.nss.test"])).first?.first == "127.0.0.21")
        #expect(Self.rows(try programs.run("getent", ["ahostsv4", "outside.example"])).first?.first == "127.0.0.51")
        let python = try programs.run(
            "/usr/bin/python3", ["-c", "import socket; print(socket.gethostbyname('mirror.example.org'))"])
        #expect(python.stdout == "127.0.0.52\n", "\(python.stderr)")
        let asked = setup.upstream.requests.compactMap { $0.queryValue("host") }
        #expect(asked.contains("alpha.nss.test"))
        #expect(asked.allSatisfy { $0.hasSuffix(".nss.test") }, "\(asked)")
        let client = try setup.daemon.connect()
        let status = try #require(try client.call("status", [:])?["result"]?["upstreams"]?.arrayValue)
        #expect(status.map { $0["name"] } == ["alibaba", "system"])
        #expect(status.last?["domains"] == ["."])
        #expect((status.last?["answered"]?.numberValue?.int64Value ?? 0) >= 2)
    }

    /// The httpdnsd process at or below `pid` (systemd-socket-activate execs it in place).
    static func daemonProcess(under pid: pid_t) -> pid_t? {
        var queue = [pid]
        while let next = queue.first {
            queue.removeFirst()
            if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(next)/exe"),
                exe.hasSuffix("/httpdnsd")
            {
                return next
            }
            let children = (try? String(contentsOfFile: "/proc/\(next)/task/\(next)/children", encoding: .utf8)) ?? ""
            queue += children.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
        }
        return nil
    }
}
