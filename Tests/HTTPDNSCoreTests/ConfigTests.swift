import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSCore

struct ConfigTests {
    let path = "/etc/httpdnsd/httpdnsd.conf"

    private func parse(_ text: String) throws -> (DaemonConfiguration, [ConfigWarning]) {
        try DaemonConfiguration.parse(text: text, path: path).get()
    }

    private func parseError(_ text: String) throws -> ConfigError {
        switch DaemonConfiguration.parse(text: text, path: path) {
        case .success:
            Issue.record("expected an error for:\n\(text)")
            throw ConfigTestFailure()
        case .failure(let problems):
            #expect(problems.errors.count == 1, "\(problems)")
            return problems.first
        }
    }

    private func problems(_ text: String) throws -> [ConfigError] {
        switch DaemonConfiguration.parse(text: text, path: path) {
        case .success:
            Issue.record("expected problems for:\n\(text)")
            throw ConfigTestFailure()
        case .failure(let problems):
            return problems.errors
        }
    }

    struct ConfigTestFailure: Error {}

    /// `HostsMapSize=`: 0 (no map) or a power of two within the bounds; 8192 by default.
    @Test func hostsMapSizeIsZeroOrAPowerOfTwoWithinTheBounds() throws {
        #expect(try parse("").0.server.hostsMapSlots == 8192)
        for (value, slots) in [("0", 0), ("64", 64), ("1048576", 1_048_576), ("", 8192)] {
            #expect(try parse("[Server]\nHostsMapSize=\(value)\n").0.server.hostsMapSlots == slots, "\(value)")
        }
        for value in ["100", "32", "2097152", "-64", "1k", "0x100"] {
            let error = try parseError("[Server]\nHostsMapSize=\(value)\n")
            #expect(error.message.contains("a power of two from 64 to 1048576"), "\(value): \(error.message)")
        }
    }

    @Test func noConfigurationMeansSystemResolverAndDocumentedDefaults() throws {
        let (configuration, warnings) = try parse("")
        #expect(warnings.isEmpty)
        #expect(configuration == DaemonConfiguration())
        let resolver = configuration.resolver
        #expect(resolver.upstreams == [UpstreamEndpoint(kind: .system, url: nil, name: "system")])
        #expect(resolver.secretKey == nil && resolver.secretKeyFile == nil)
        #expect(resolver.timeoutMs == 2_000)
        #expect(resolver.serveStale)
        #expect(resolver.minTTLMs == 0)
        #expect(resolver.maxTTLMs == 86_400_000)
        #expect(resolver.maxStaleMs == 86_400_000)
        #expect(resolver.negativeTTLMs == 30_000)
        #expect(resolver.cacheSize == 4_096)
        #expect(resolver.maxUpstreamQueries == 1_024 && resolver.maxUpstreamQueriesPerUser == 64)
        #expect(resolver.upstreamQueryRatePerUser == 20 && resolver.upstreamQueryBurstPerUser == 200)
        #expect(resolver.prefetch.isEmpty && resolver.staticAnswers.isEmpty)
        #expect(resolver.caFile == nil && resolver.tlsName == nil)
        #expect(configuration.cookies.maxPerDomain == 180)
        #expect(configuration.cookies.maxTotal == 3_000)
        let server = configuration.server
        #expect(server.maxLineLength == 1_048_576)
        #expect(server.maxConnections == 4_096)
        #expect(server.maxConnectionsPerUser == 1_024)
        #expect(server.maxRequestsInFlight == 1_024)
        #expect(server.maxBatch == 1_024)
        #expect(server.idleExitMs == 60_000)
        #expect(server.socket == nil)
        #expect(!configuration.store.resetOnCorruption)
    }

    @Test func theExampleFromAPIMarkdown() throws {
        let text = """
            [Resolver]
            # KIND URL, tried in order; KIND is alibaba, tencent, doh (RFC 8484), doh-json, system
            Upstream=alibaba http://203.107.1.1/100000
            Upstream=doh-json https://dns.alidns.com/resolve
            Upstream=system
            # Alibaba signed requests (sign_d); SecretKeyFile= keeps it out of the config file
            SecretKey=
            Timeout=2s
            ServeStale=yes
            """
        let (configuration, warnings) = try parse(text)
        #expect(warnings.isEmpty)
        #expect(
            configuration.resolver.upstreams == [
                UpstreamEndpoint(kind: .alibaba, url: "http://203.107.1.1/100000", name: "alibaba"),
                UpstreamEndpoint(kind: .dohJSON, url: "https://dns.alidns.com/resolve", name: "doh-json"),
                UpstreamEndpoint(kind: .system, url: nil, name: "system"),
            ])
        #expect(configuration.resolver.secretKey == nil)
        #expect(configuration.resolver.timeoutMs == 2_000)
        #expect(configuration.resolver.serveStale)
    }

    @Test func everyKey() throws {
        let text = """
            [Resolver]
            Upstream=tencent http://119.29.29.98
            Upstream=doh https://[2001:db8::53]:8443/dns-query
            SecretKey=abc123
            SecretKeyFile=/etc/httpdnsd/secret
            Timeout=1500ms
            ServeStale=no
            MinTTL=10
            MaxTTL=2h
            MaxStale=3d
            NegativeTTL=1min
            CacheSize=10000
            Prefetch=api.example.com cdn.example.com.
            CAFile=/etc/ssl/private-ca.pem
            TLSName=dns.example.net
            Static=intranet.example 10.0.0.1 2001:DB8::1
            MaxUpstreamQueries=200
            MaxUpstreamQueriesPerUser=8
            UpstreamQueryRatePerUser=5
            UpstreamQueryBurstPerUser=50

            [Cookies]
            MaxPerDomain=50
            MaxTotal=5000

            [Server]
            MaxLineLength=512K
            MaxConnections=100
            MaxConnectionsPerUser=10
            MaxRequestsInFlight=64
            MaxRequestsInFlightPerUser=128
            MaxBatch=16
            IdleExit=5min
            IdleTimeout=90s
            LineTimeout=1500ms
            Socket=/run/httpdnsd/test.sock

            [Store]
            ResetOnCorruption=yes
            """
        let (configuration, warnings) = try parse(text)
        #expect(warnings.map(\.line) == [5])  // SecretKey= and SecretKeyFile= together
        let resolver = configuration.resolver
        #expect(
            resolver.upstreams == [
                UpstreamEndpoint(kind: .tencent, url: "http://119.29.29.98", name: "tencent"),
                UpstreamEndpoint(kind: .doh, url: "https://[2001:db8::53]:8443/dns-query", name: "doh"),
            ])
        #expect(resolver.secretKey?.revealed == "abc123")
        #expect(resolver.secretKeyFile == "/etc/httpdnsd/secret")
        #expect(resolver.timeoutMs == 1_500)
        #expect(!resolver.serveStale)
        #expect(resolver.minTTLMs == 10_000)
        #expect(resolver.maxTTLMs == 7_200_000)
        #expect(resolver.maxStaleMs == 259_200_000)
        #expect(resolver.negativeTTLMs == 60_000)
        #expect(resolver.cacheSize == 10_000)
        #expect(resolver.prefetch == ["api.example.com", "cdn.example.com"])
        #expect(resolver.caFile == "/etc/ssl/private-ca.pem")
        #expect(resolver.tlsName == "dns.example.net")
        #expect(
            resolver.staticAnswers == [StaticAnswer(host: "intranet.example", addresses: ["10.0.0.1", "2001:db8::1"])])
        #expect(resolver.maxUpstreamQueries == 200)
        #expect(resolver.maxUpstreamQueriesPerUser == 8)
        #expect(resolver.upstreamQueryRatePerUser == 5 && resolver.upstreamQueryBurstPerUser == 50)
        #expect(configuration.cookies.maxPerDomain == 50)
        #expect(configuration.cookies.maxTotal == 5_000)
        let server = configuration.server
        #expect(server.maxLineLength == 524_288)
        #expect(server.maxConnections == 100)
        #expect(server.maxConnectionsPerUser == 10)
        #expect(server.maxRequestsInFlight == 64)
        #expect(server.maxRequestsInFlightPerUser == 128)
        #expect(server.maxBatch == 16)
        #expect(server.idleExitMs == 300_000)
        #expect(server.idleTimeoutMs == 90_000)
        #expect(server.lineTimeoutMs == 1_500)
        #expect(server.socket == "/run/httpdnsd/test.sock")
        #expect(configuration.store.resetOnCorruption)
    }

    @Test func upstreamListReplacesTheDefaultAccumulatesAndResets() throws {
        let (first, _) = try parse("[Resolver]\nUpstream=alibaba http://203.107.1.1/100000\n")
        #expect(first.resolver.upstreams.map(\.kind) == [.alibaba])

        let (reset, warnings) = try parse(
            """
            [Resolver]
            Upstream=alibaba http://203.107.1.1/100000
            Upstream=tencent http://119.29.29.98
            Upstream=
            Upstream=doh https://dns.example/dns-query
            """)
        #expect(warnings.isEmpty)
        #expect(reset.resolver.upstreams.map(\.kind) == [.doh])

        let (empty, emptyWarnings) = try parse("[Resolver]\nUpstream=system\nUpstream=\n")
        #expect(empty.resolver.upstreams == [.system])
        #expect(emptyWarnings.map(\.line) == [3])
    }

    @Test func repeatedUpstreamKindsGetDistinctNames() throws {
        let (configuration, _) = try parse(
            """
            [Resolver]
            Upstream=doh https://a.example/dns-query
            Upstream=system
            Upstream=doh https://b.example/dns-query
            Upstream=DOH https://c.example/dns-query
            """)
        #expect(configuration.resolver.upstreams.map(\.name) == ["doh", "system", "doh#2", "doh#3"])
    }

    /// `Route=UPSTREAM[,UPSTREAM...] DOMAIN...` names upstreams by name (`~` allowed, as
    /// systemd-resolved's routing-only domains); once any route is set the system resolver joins
    /// the upstreams for the names outside every route, unless `DefaultRoute=` names others.
    @Test func routesNameUpstreamsAndDefaultToTheSystemResolver() throws {
        let (configuration, warnings) = try parse(
            """
            [Resolver]
            Upstream=alibaba http://127.0.0.1:9/1
            Upstream=doh https://a.example/dns-query
            Route=alibaba ~Corp.Example. shop.example
            Route=alibaba,doh api.corp.example
            """)
        #expect(warnings.isEmpty)
        #expect(
            configuration.resolver.routes == [
                UpstreamRoute(domains: ["corp.example", "shop.example"], upstreams: ["alibaba"]),
                UpstreamRoute(domains: ["api.corp.example"], upstreams: ["alibaba", "doh"]),
            ])
        #expect(configuration.resolver.defaultRoute == nil)
        #expect(configuration.resolver.upstreams.map(\.name) == ["alibaba", "doh", "system"])
        let routing = UpstreamRouting(
            upstreams: configuration.resolver.upstreams, routes: configuration.resolver.routes,
            defaultRoute: configuration.resolver.defaultRoute)
        #expect(routing.upstreams(for: "corp.example") == [0])
        #expect(routing.upstreams(for: "x.api.corp.example") == [0, 1])
        #expect(routing.upstreams(for: "corp.example.net") == [2])
        #expect(routing.upstreams(for: "com") == [2])
        #expect(routing.domains(of: 1) == ["api.corp.example"])
        #expect(routing.domains(of: 2) == ["."])

        // DefaultRoute= names the others; an upstream nothing routes to is never asked: a warning.
        let (other, unused) = try parse(
            """
            [Resolver]
            Upstream=alibaba http://127.0.0.1:9/1
            Upstream=tencent http://127.0.0.1:9/t
            Upstream=doh https://a.example/dns-query
            Route=alibaba corp.example
            DefaultRoute=tencent
            """)
        #expect(other.resolver.upstreams.map(\.name) == ["alibaba", "tencent", "doh"])
        #expect(other.resolver.defaultRoute == ["tencent"])
        #expect(
            unused.map(\.message).first == "upstream doh is in no Route= and not in DefaultRoute=: it is never asked")
        #expect(
            unused.map(\.message).last?.hasPrefix(
                "every name outside the Route= domains goes to the billed upstream(s) tencent") == true)

        // Billed services that receive every name are warned of (each query billed, a name outside
        // the console answered empty); with a free upstream beside them, or routes, they are not.
        let (_, billed) = try parse("[Resolver]\nUpstream=alibaba http://127.0.0.1:9/1\n")
        #expect(
            billed.map(\.message).first?.hasPrefix(
                "every name (no Route= is set) goes to the billed upstream(s) alibaba") == true)
        #expect(try parse("[Resolver]\nUpstream=alibaba http://127.0.0.1:9/1\nUpstream=system\n").1.isEmpty)
        #expect(try parse("[Resolver]\nUpstream=alibaba http://127.0.0.1:9/1\nRoute=alibaba a.example\n").1.isEmpty)

        // Without routes every upstream is asked, in order; Route= empties like the other lists.
        let (none, _) = try parse("[Resolver]\nUpstream=doh https://a.example/dns-query\nRoute=doh a.example\nRoute=\n")
        #expect(none.resolver.routes.isEmpty)
        #expect(none.resolver.upstreams.map(\.name) == ["doh"])
        #expect(UpstreamRouting(upstreams: none.resolver.upstreams).upstreams(for: "a.example") == [0])
    }

    @Test func onNetworkChange() throws {
        #expect(try parse("").0.resolver.onNetworkChange == .refresh)
        for policy in NetworkChangePolicy.allCases {
            #expect(try parse("[Resolver]\nOnNetworkChange=\(policy.rawValue)\n").0.resolver.onNetworkChange == policy)
        }
        #expect(
            try parse("[Resolver]\nOnNetworkChange=flush\nOnNetworkChange=\n").0.resolver.onNetworkChange == .refresh)
        let typo = try parseError("[Resolver]\nOnNetworkChange=refesh\n")
        #expect(typo.line == 2 && typo.key == "OnNetworkChange")
        #expect(typo.message == #"expected refresh, flush or ignore, not "refesh" (did you mean refresh?)"#)
        #expect(try parseError("[Resolver]\nOnNetworkChange=Flush\n").message.hasSuffix("(did you mean flush?)"))
        #expect(try parseError("[Resolver]\nOnNetworkChang=flush\n").message.contains("did you mean OnNetworkChange=?"))
        #expect(try parseError("[Server]\nOnNetworkChange=flush\n").message.contains("belongs in [Resolver]"))
    }

    @Test func routeMistakesAreErrors() throws {
        let upstreams = "[Resolver]\nUpstream=alibaba http://127.0.0.1:9/1\nUpstream=doh https://a.example/q\n"
        let typo = try parseError(upstreams + "Route=alibab example.com\n")
        #expect(typo.line == 4)
        #expect(
            typo.message
                == #"no upstream is named "alibab" (the upstreams: alibaba, doh, system) (did you mean alibaba?)"#)
        #expect(try parseError(upstreams + "DefaultRoute=tencent\n").key == "DefaultRoute")
        let twice = try parseError(upstreams + "Route=alibaba example.com\nRoute=doh Example.com.\n")
        #expect(twice.line == 5)
        #expect(twice.message == "example.com is routed twice (first on line 4)")
        #expect(try parseError(upstreams + "Route=alibaba ~.\n").message.contains("DefaultRoute="))
        #expect(try parseError(upstreams + "Route=alibaba\n").message.hasPrefix("expected UPSTREAM"))
        #expect(try parseError(upstreams + "Route=alibaba,,doh example.com\n").message.contains("empty upstream name"))
        #expect(try parseError(upstreams + "Route=doh,doh example.com\n").message == "upstream doh is listed twice")
        #expect(try parseError(upstreams + "Route=doh bad_host!.example\n").message.hasPrefix("invalid host name"))
    }

    @Test func prefetchAndStaticAreListsWithReset() throws {
        let (configuration, _) = try parse(
            """
            [Resolver]
            Prefetch=a.example b.example
            Prefetch=c.example a.example
            Static=one.example 192.0.2.1
            Static=
            Static=two.example 192.0.2.2 192.0.2.3
            Static=three.example ::1
            """)
        #expect(configuration.resolver.prefetch == ["a.example", "b.example", "c.example"])
        #expect(
            configuration.resolver.staticAnswers == [
                StaticAnswer(host: "two.example", addresses: ["192.0.2.2", "192.0.2.3"]),
                StaticAnswer(host: "three.example", addresses: ["::1"]),
            ])
        let (reset, _) = try parse("[Resolver]\nPrefetch=a.example\nPrefetch=\nPrefetch=b.example\n")
        #expect(reset.resolver.prefetch == ["b.example"])
    }

    @Test func scalarKeysLastWinsAndEmptyRestoresDefault() throws {
        let (configuration, _) = try parse(
            """
            [Resolver]
            Timeout=5s
            Timeout=3s
            CacheSize=10
            CacheSize=
            TLSName=a.example
            TLSName=
            [Server]
            IdleExit=0
            """)
        #expect(configuration.resolver.timeoutMs == 3_000)
        #expect(configuration.resolver.cacheSize == 4_096)
        #expect(configuration.resolver.tlsName == nil)
        #expect(configuration.server.idleExitMs == 0)
    }

    @Test func infinityWhereItMakesSense() throws {
        let (configuration, _) = try parse(
            "[Resolver]\nMaxStale=infinity\nMaxTTL=infinity\n[Server]\nIdleExit=infinity\nIdleTimeout=infinity\nLineTimeout=0\n"
        )
        #expect(configuration.resolver.maxStaleMs == .max)
        #expect(configuration.resolver.maxTTLMs == .max)
        #expect(configuration.server.idleExitMs == 0)
        #expect(configuration.server.idleTimeoutMs == 0)
        #expect(configuration.server.lineTimeoutMs == 0)
        let error = try parseError("[Resolver]\nTimeout=infinity\n")
        #expect(error.key == "Timeout" && error.line == 2)
    }

    /// A typo must not start the daemon on the default it meant to change: unknown sections and
    /// keys and lines without `=` are errors, every one of them reported with its line and the
    /// name it most likely meant.
    @Test func unknownSectionsKeysAndOddLinesAreErrorsWithLineNumbersAndSuggestions() throws {
        let text = """
            Stray=1
            [Resolver]
            Timeout=1s
            Colour=blue
            timeout=9s
            just some words
            Upstrem=system
            Upstream system
            MaxBatch=8
            [Metrics]
            Enabled=yes
            [Severs]
            [Server]
            MaxBatch=8
            MaxBatch=zero
            """
        let errors = try problems(text)
        #expect(errors.map(\.line) == [1, 4, 5, 6, 7, 8, 9, 10, 12, 15])
        #expect(errors.allSatisfy { $0.path == path })
        let byLine = Dictionary(errors.map { ($0.line, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byLine[1]?.description == "\(path):1: assignment outside of a section")
        #expect(byLine[4]?.description == "\(path):4: unknown key Colour= in [Resolver]")
        #expect(byLine[4]?.code == .unknownKey)
        #expect(byLine[5]?.message.contains("did you mean Timeout=?") == true)
        #expect(byLine[6]?.message == "missing '=' in an assignment")
        #expect(byLine[7]?.message.contains("did you mean Upstream=?") == true)
        #expect(byLine[8]?.message.contains("did you mean Upstream=...?") == true)
        #expect(byLine[9]?.message.contains("MaxBatch= belongs in [Server]") == true)
        #expect(byLine[10]?.code == .unknownSection)
        #expect(byLine[12]?.message.contains("did you mean [Server]?") == true)
        #expect(byLine[15]?.key == "MaxBatch")
    }

    @Test func suggestionsAreCloseSpellingsOnly() {
        #expect(NameSuggestion.closest(to: "Upstraem", among: ["Upstream", "Timeout"]) == "Upstream")
        #expect(NameSuggestion.closest(to: "upstream", among: ["Upstream"]) == "Upstream")
        #expect(NameSuggestion.closest(to: "MaxTTl", among: ["MaxTTL", "MinTTL"]) == "MaxTTL")
        #expect(NameSuggestion.closest(to: "Colour", among: ["Upstream", "Timeout", "CAFile"]) == nil)
        #expect(NameSuggestion.closest(to: "TTL", among: ["MaxTTL"]) == nil)
        #expect(NameSuggestion.editDistance(Array("ab".unicodeScalars), Array("ba".unicodeScalars)) == 1)
        #expect(NameSuggestion.editDistance(Array("".unicodeScalars), Array("abc".unicodeScalars)) == 3)
    }

    @Test func everyValueProblemIsReportedNotOnlyTheFirst() throws {
        let errors = try problems("[Resolver]\nTimeout=2 parsecs\nCacheSize=-1\nMinTTL=1h\nMaxTTL=1m\n")
        #expect(errors.map(\.key) == ["Timeout", "CacheSize", "MaxTTL"])
    }

    @Test func logLevelTakesSyslogNames() throws {
        #expect(try parse("[Server]\nLogLevel=debug\n").0.server.logLevel == .debug)
        #expect(try parse("[Server]\nLogLevel=warn\n").0.server.logLevel == .warning)
        #expect(try parse("[Server]\nLogLevel=\n").0.server.logLevel == .info)
        let error = try parseError("[Server]\nLogLevel=loud\n")
        #expect(error.key == "LogLevel" && error.message.contains("error, warning, notice, info, debug"))
    }

    @Test func commentsBlankLinesWhitespaceAndContinuations() throws {
        let text =
            "# comment\n; also a comment\n\n  [Resolver]  \n  Timeout  =  4s  \n"
            + "Prefetch=a.example \\\n  b.example \\\n# a comment inside the continuation\n  c.example\n"
            + "# a comment ending in a backslash does not continue \\\nCacheSize=7\r\nServeStale=off\r\n"
        let (configuration, warnings) = try parse(text)
        #expect(warnings.isEmpty)
        #expect(configuration.resolver.timeoutMs == 4_000)
        #expect(configuration.resolver.prefetch == ["a.example", "b.example", "c.example"])
        #expect(configuration.resolver.cacheSize == 7)
        #expect(!configuration.resolver.serveStale)
    }

    @Test func errorsPointAtTheLineOfAContinuedAssignment() throws {
        let error = try parseError("[Resolver]\nPrefetch=a.example \\\n  bad!name\n")
        #expect(error.line == 2)
        #expect(error.key == "Prefetch")
    }

    @Test func errorDescriptionMatchesTheDocumentedForm() throws {
        let text = "[Resolver]\n\n\n\n\n\nTimeout=2 parsecs\n"
        let error = try parseError(text)
        #expect(error.description == "/etc/httpdnsd/httpdnsd.conf:7: Timeout=: invalid time span \"2 parsecs\"")
        #expect(error.path == path && error.line == 7 && error.key == "Timeout" && error.code == .invalidValue)
    }

    @Test(
        arguments: [
            ("Resolver", "Upstream=carrier-pigeon http://x.example", "Upstream", "unknown upstream kind"),
            ("Resolver", "Upstream=alibaba", "Upstream", "needs a URL"),
            ("Resolver", "Upstream=system http://x.example", "Upstream", "takes no URL"),
            ("Resolver", "Upstream=doh ftp://x.example/", "Upstream", "not an http"),
            ("Resolver", "Upstream=doh https://x.example/ extra", "Upstream", "extra words"),
            ("Resolver", "Upstream=doh https:///path", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://203.0.056.1/", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://x.example\\@127.0.0.1/", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://@x.example/", "Upstream", "user information"),
            ("Resolver", "Upstream=doh https://x!y.example/", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://x.123/", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://x.example:0/", "Upstream", "invalid port"),
            ("Resolver", "Upstream=doh https://x.example:65536/", "Upstream", "invalid host or port"),
            ("Resolver", "Upstream=doh https://[2001:db8::zz]/", "Upstream", "invalid host or port"),
            ("Resolver", "Upstream=doh https://x.example/#frag", "Upstream", "fragment"),
            ("Resolver", "SecretKeyFile=relative/secret", "SecretKeyFile", "not absolute"),
            ("Resolver", "CAFile=ca.pem", "CAFile", "not absolute"),
            ("Resolver", "Timeout=0", "Timeout", "greater than 0"),
            ("Resolver", "Timeout=soon", "Timeout", "invalid time span"),
            ("Resolver", "ServeStale=maybe", "ServeStale", "invalid boolean"),
            ("Resolver", "MinTTL=-5", "MinTTL", "invalid time span"),
            ("Resolver", "MaxTTL=forever", "MaxTTL", "invalid time span"),
            ("Resolver", "MaxStale=1 fortnight", "MaxStale", "invalid time span"),
            ("Resolver", "NegativeTTL=infinity", "NegativeTTL", "not allowed"),
            ("Resolver", "CacheSize=0", "CacheSize", "positive integer"),
            ("Resolver", "CacheSize=4k", "CacheSize", "positive integer"),
            ("Resolver", "CacheSize=-1", "CacheSize", "positive integer"),
            ("Resolver", "Prefetch=good.example bad..example", "Prefetch", "invalid host name"),
            ("Resolver", "Prefetch=-bad.example", "Prefetch", "invalid host name"),
            ("Resolver", "TLSName=not a name", "TLSName", "invalid host name"),
            ("Resolver", "Static=host.example", "Static", "HOST IP"),
            ("Resolver", "Static=host.example 192.0.2.256", "Static", "invalid IP address"),
            ("Resolver", "Static=host.example 192.0.2.01", "Static", "invalid IP address"),
            ("Resolver", "Static=host.example 2001:db8::1::2", "Static", "invalid IP address"),
            ("Resolver", "Static=host.example fe80::1%eth0", "Static", "invalid IP address"),
            // Fullwidth hex digits were taken as IPv6 here, then dropped by the resolver (found by fuzzing).
            ("Resolver", "Static=host.example \u{FF21}::1", "Static", "invalid IP address"),
            ("Resolver", "Static=host.example 1.2.3.\u{FF14}", "Static", "invalid IP address"),
            ("Resolver", "Upstream=doh https://[\u{FF41}::1]/", "Upstream", "invalid host or port"),
            // A name ending in a number is an IPv4 address to curl, with 056 read as octal (found by fuzzing).
            ("Resolver", "Upstream=alibaba http://203.0.056.1/100000", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://dns.1/dns-query", "Upstream", "invalid host"),
            ("Resolver", "Upstream=doh https://10.0.0x1/dns-query", "Upstream", "invalid host"),
            ("Resolver", "Static=bad_host!.example 192.0.2.1", "Static", "invalid host name"),
            ("Cookies", "MaxPerDomain=lots", "MaxPerDomain", "positive integer"),
            ("Cookies", "MaxTotal=0", "MaxTotal", "positive integer"),
            ("Server", "MaxLineLength=1MB", "MaxLineLength", "invalid size"),
            ("Server", "MaxLineLength=0", "MaxLineLength", "greater than 0"),
            ("Server", "MaxConnections=1.5", "MaxConnections", "positive integer"),
            ("Server", "MaxConnectionsPerUser=x", "MaxConnectionsPerUser", "positive integer"),
            ("Server", "MaxRequestsInFlight=0", "MaxRequestsInFlight", "positive integer"),
            ("Server", "MaxBatch= ", "MaxBatch", nil),
            ("Server", "IdleExit=later", "IdleExit", "invalid time span"),
            ("Server", "IdleTimeout=soon", "IdleTimeout", "invalid time span"),
            ("Server", "LineTimeout=-1s", "LineTimeout", "invalid time span"),
            ("Server", "MaxRequestsInFlightPerUser=0", "MaxRequestsInFlightPerUser", "positive integer"),
            ("Server", "Socket=run/x.sock", "Socket", "not absolute"),
            ("Store", "ResetOnCorruption=sometimes", "ResetOnCorruption", "invalid boolean"),
        ] as [(String, String, String, String?)])
    func badValuesAreErrorsNamingFileLineAndKey(section: String, line: String, key: String, message: String?) throws {
        let text = "# test\n[\(section)]\n\(line)\n"
        guard let message else {
            // An empty value is not an error: it restores the default.
            #expect(throws: Never.self) { try parse(text) }
            return
        }
        let error = try parseError(text)
        #expect(error.path == path)
        #expect(error.line == 3)
        #expect(error.key == key)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(error.description.hasPrefix("\(path):3: \(key)=: "))
    }

    @Test func socketPathMustFitSunPath() throws {
        let long = "/run/" + String(repeating: "s", count: 103)
        let error = try parseError("[Server]\nSocket=\(long)\n")
        #expect(error.key == "Socket" && error.message.contains("107 bytes"))
        let (ok, _) = try parse("[Server]\nSocket=/run/" + String(repeating: "s", count: 102) + "\n")
        #expect(ok.server.socket?.utf8.count == 107)
    }

    @Test func minTTLAboveMaxTTLIsAConflict() throws {
        let error = try parseError("[Resolver]\nMaxTTL=1min\nMinTTL=2min\n")
        #expect(error.code == .conflict)
        #expect(error.line == 3 && error.key == "MinTTL")
        let defaultMax = try parseError("[Resolver]\nMinTTL=2d\n")
        #expect(defaultMax.line == 2 && defaultMax.key == "MinTTL")
    }

    @Test func malformedSectionHeaderIsASyntaxError() throws {
        let error = try parseError("[Resolver]\nTimeout=1s\n[Server\n")
        #expect(error.code == .syntax)
        #expect(error.line == 3 && error.key == nil)
        #expect(error.description.hasPrefix("\(path):3: invalid section header"))
    }

    @Test(arguments: [
        "http://203.107.1.1/100000", "https://dns.alidns.com/resolve", "HTTPS://dns.example/dns-query",
        "http://localhost:8080", "http://127.0.0.1:53053/d", "https://[::1]:8443/dns-query?x=1",
        "https://dns.google/resolve",
    ])
    func acceptedUpstreamURLs(url: String) throws {
        let (configuration, _) = try parse("[Resolver]\nUpstream=doh-json \(url)\n")
        #expect(configuration.resolver.upstreams.first?.url == url)
    }

    @Test func userInformationInAURLIsRejectedWithoutEchoingIt() throws {
        let error = try parseError("[Resolver]\nUpstream=doh https://admin:hunter2@dns.example/dns-query\n")
        #expect(error.key == "Upstream")
        #expect(!error.description.contains("hunter2"))
    }

    @Test func cacheLimitsFromTheResolverSection() throws {
        let (configuration, _) = try parse(
            "[Resolver]\nMinTTL=1500ms\nMaxTTL=1h\nNegativeTTL=10s\nMaxStale=2h\nCacheSize=100\n")
        let limits = DNSCacheLimits(configuration.resolver)
        #expect(limits == DNSCacheLimits(minTTL: 2, maxTTL: 3_600, negativeTTL: 10, maxStale: 7_200, capacity: 100))
        let (noStale, _) = try parse("[Resolver]\nServeStale=no\n")
        #expect(DNSCacheLimits(noStale.resolver).maxStale == 0)
        #expect(DNSCacheLimits(DaemonConfiguration().resolver) == DNSCacheLimits())
    }
}

struct ConfigSecretTests {
    let secret = "Sup3rS3cretK3y"

    @Test func secretNeverAppearsInDescriptionsOfTheConfiguration() throws {
        let (configuration, warnings) = try DaemonConfiguration.parse(
            text: "[Resolver]\nSecretKey=\(secret)\nSecretKeyFile=/etc/httpdnsd/key\n", path: "/x.conf"
        ).get()
        #expect(configuration.resolver.secretKey?.revealed == secret)
        var dumped = ""
        dump(configuration, to: &dumped)
        let renderings =
            [
                String(describing: configuration), String(reflecting: configuration),
                String(describing: configuration.resolver), String(reflecting: configuration.resolver),
                "\(configuration.resolver.secretKey as Any)", String(reflecting: configuration.resolver.secretKey),
                dumped,
            ] + warnings.map(\.description)
        for text in renderings {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(String(describing: configuration).contains("<redacted>"))
    }

    @Test func secretNeverAppearsInErrorsOrWarnings() throws {
        let badSecret = "abc def\(secret)"
        for text in [
            "[Resolver]\nSecretKey=\(badSecret)\n",
            "[Resolver]\nSecretKey=\(secret) \\\n  more\n",
        ] {
            guard case .failure(let problems) = DaemonConfiguration.parse(text: text, path: "/x.conf") else {
                Issue.record("a secret with whitespace must be rejected")
                continue
            }
            let error = problems.first
            #expect(error.key == "SecretKey" && error.line == 2)
            #expect(!error.description.contains(secret))
            #expect(!String(reflecting: error).contains(secret))
        }
        // A misspelt key or a line without '=' is an error that does not echo its value.
        guard
            case .failure(let problems) = DaemonConfiguration.parse(
                text: "[Resolver]\nSecretkey=\(secret)\nSecretKey \(secret)\n", path: "/x.conf")
        else {
            Issue.record("a misspelt key and a line without '=' must be refused")
            return
        }
        #expect(problems.errors.count == 2)
        #expect(!problems.description.contains(secret))
    }
}

/// What the documentation presents as the defaults is what runs without a file.
struct DocumentedDefaultsTests {
    /// The README's block marked as the defaults, as written.
    @Test func theReadmesDefaultsBlockIsTheEmbeddedDefault() throws {
        let readme = try String(contentsOfFile: BuiltProducts.packageRoot + "/README.md", encoding: .utf8)
        let block = try #require(
            MarkdownBlocks.block(after: "<!-- example: check-config; the defaults", in: readme),
            "no defaults block in the README")
        let (configuration, warnings) = try DaemonConfiguration.parse(text: block, path: "README.md").get()
        #expect(warnings.isEmpty)
        #expect(configuration == DaemonConfiguration())
    }

    /// The packaged sample with every commented-out assignment of its own sections taken in (the
    /// `[Fleet]` section and the provider samples, commented out as examples, stay out).
    @Test func thePackagedSampleListsTheDefaults() throws {
        let sample = try String(contentsOfFile: BuiltProducts.packageRoot + "/packaging/httpdnsd.conf", encoding: .utf8)
        var lines: [String] = []
        for line in sample.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#[Fleet]") { break }
            if line.hasPrefix("#Upstream=") && !line.hasPrefix("#Upstream=system") { continue }
            if line.hasPrefix("#"), let first = line.dropFirst().first, first.isUppercase, line.contains("=") {
                lines.append(String(line.dropFirst()))
            } else {
                lines.append(String(line))
            }
        }
        let (configuration, _) = try DaemonConfiguration.parse(text: lines.joined(separator: "\n"), path: "sample")
            .get()
        var expected = DaemonConfiguration()
        // Socket= shows the root default, which otherwise depends on the caller.
        expected.server.socket = "/run/httpdnsd/httpdnsd.sock"
        #expect(configuration == expected)
    }
}
