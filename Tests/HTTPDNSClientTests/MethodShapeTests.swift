import HTTPDNSProtocol
import Testing

/// Each method's typed shapes against the OpenRPC document: what the types encode satisfies the
/// document's schemas, and every documented param is read by the params type.
struct MethodShapeTests {
    static func method(_ method: Method) throws -> JSON {
        let all = try OpenRPCDocumentTests.methods()
        return try #require(all.first { $0["name"]?.stringValue == method.rawValue }, "\(method.rawValue)")
    }

    /// Results as the daemon may send them, edge cases included (empty lists, nulls, escapes).
    static func sampleResults(_ method: Method) throws -> [any MethodResult] {
        switch method {
        case .resolve:
            return [
                ResolveResult(
                    host: "api.example.com", ipv4: ["203.0.113.10", "203.0.113.11"], ipv6: ["2001:db8::1"], ttl: 57,
                    stale: false, source: .upstream, upstream: "alibaba"),
                ResolveResult(host: "xn--bcher-kva.example", ipv4: [], ipv6: [], ttl: 0, stale: true, source: .cache),
                ResolveResult(
                    host: "192.0.2.7", ipv4: ["192.0.2.7"], ipv6: [], ttl: 86_400, stale: false, source: .literal),
                ResolveResult(host: "i.example", ipv4: ["10.0.0.5"], ipv6: [], ttl: 1, stale: false, source: .static),
                ResolveResult(host: "s.example", ipv4: [], ipv6: ["::1"], ttl: 9, stale: false, source: .system),
                ResolveResult(host: "f.example", ipv4: ["192.0.2.1"], ipv6: [], ttl: 9, stale: false, source: .fleet),
            ]
        case .reverse:
            return [
                ReverseResult(
                    address: "2001:db8::10", hosts: ["a.example.com", "b.example.com"], ttl: 0,
                    names: [
                        .init(host: "a.example.com", ttl: 0, rememberedFor: 86_000),
                        .init(host: "b.example.com", ttl: 0, rememberedFor: 1),
                    ])
            ]
        case .getCookieHeader:
            return [
                CookieHeaderResult(header: "sid=abc; lang=en", count: 2), CookieHeaderResult(header: "", count: 0),
                CookieHeaderResult(header: #"q="x\y"; é=😀"#, count: 2),
            ]
        case .handleSetCookie:
            return [
                SetCookieResult(host: "a.example.com", stored: 1, rejected: [.init(index: 1, reason: "public-suffix")]),
                SetCookieResult(host: "203.0.113.10", stored: 0, rejected: []),
            ]
        case .deleteCookies:
            return [DeleteCookiesResult(deleted: 0), DeleteCookiesResult(deleted: 3)]
        case .listCookies:
            return [
                ListCookiesResult(cookies: []),
                ListCookiesResult(cookies: [
                    Cookie(
                        name: "sid", value: "a\"b", domain: "a.example.com", hostOnly: true, path: "/", expires: nil,
                        secure: true, httpOnly: true, sameSite: .lax, partitioned: false, created: 1_764_400_000),
                    Cookie(
                        name: "", value: "v", domain: "example.com", hostOnly: false, path: "/p",
                        expires: 1_767_225_600,
                        secure: false, httpOnly: false, sameSite: .default, partitioned: true, created: 0),
                ]),
            ]
        case .importCookies:
            return [ImportCookiesResult(imported: 2)]
        case .exportCookies:
            return [
                ExportCookiesResult(data: ""),
                ExportCookiesResult(data: "# Netscape HTTP Cookie File\n.example.com\tTRUE\t/\tTRUE\t0\tsid\tabc\n"),
                ExportCookiesResult(
                    data:
                        "# Netscape HTTP Cookie File\n# Left out: 1 cookie holding a TAB in the name, value or path.\n",
                    leftOut: [CookieKey(domain: "a.example.com", path: "/", name: "t\tab")]),
            ]
        case .forget:
            return [ForgetResult(forgotten: 0), ForgetResult(forgotten: 3)]
        case .flushCache:
            return [FlushCacheResult(flushed: 0), FlushCacheResult(flushed: 12)]
        case .status:
            return [
                StatusResult(
                    version: "0.1.0", uptime: 12, cache: .init(entries: 1, hits: 2, misses: 3, staleServed: 0),
                    cookieCount: 4,
                    upstreams: [
                        UpstreamStatus(name: "system", kind: "system", healthy: true, lastError: nil, latencyMs: nil),
                        UpstreamStatus(
                            name: "alibaba", kind: "alibaba", healthy: false, lastError: "timed out", latencyMs: 12.5),
                    ])
            ]
        case .showCache:
            return [
                ShowCacheResult(entries: []),
                ShowCacheResult(entries: [
                    .init(
                        host: "a.example", family: "ipv4", addresses: ["192.0.2.1"], ttl: 30, stale: false,
                        upstream: "doh"),
                    .init(host: "a.example", family: "ipv6", addresses: [], ttl: 0, stale: true, upstream: nil),
                ]),
            ]
        case .statistics:
            return [
                StatisticsResult(
                    since: 1_767_225_600, cache: .init(entries: 1, hits: 2, misses: 3, staleServed: 0),
                    upstreams: [.init(name: "doh", queries: 5, failures: 1)],
                    cookies: .init(stored: 1, rejected: 2, deleted: 3, headers: 4))
            ]
        case .resetStatistics: return [ResetStatisticsResult(since: 1_767_225_600)]
        case .metrics: return [MetricsResult(text: "# HELP x y\n# TYPE x gauge\nx 1\n")]
        case .monitor:
            return [MonitorResult(scope: "own", queueLimit: 1024), MonitorResult(scope: "all", queueLimit: 1)]
        case .discover:
            return [DiscoverResult(encodedDocument: try OpenRPCDocumentTests.document().encoded)]
        }
    }

    /// Params as clients send them.
    static func sampleParams(_ method: Method) -> [any MethodParams] {
        switch method {
        case .resolve:
            return [
                ResolveParams(host: "a.example"),
                ResolveParams(host: "b.example", family: .ipv6, allowStale: false, timeoutMs: 60_000),
            ]
        case .reverse: return [ReverseParams(address: "203.0.113.10")]
        case .getCookieHeader:
            return [
                GetCookieHeaderParams(url: "https://a.example/"),
                GetCookieHeaderParams(
                    url: "https://192.0.2.1/", host: "a.example", forScript: true, siteForCookies: "https://b.example/",
                    topLevelNavigation: true),
            ]
        case .handleSetCookie:
            return [
                HandleSetCookieParams(url: "https://a.example/", setCookie: []),
                HandleSetCookieParams(url: "https://192.0.2.1/", host: "a.example", setCookie: ["a=1", "b=2"]),
            ]
        case .deleteCookies:
            return [
                DeleteCookiesParams(target: .url("https://192.0.2.1/", host: "a.example"), name: "sid"),
                DeleteCookiesParams(target: .domain("example.com")), DeleteCookiesParams(target: .all),
            ]
        case .listCookies: return [ListCookiesParams(), ListCookiesParams(domain: "example.com")]
        case .importCookies: return [ImportCookiesParams(data: "")]
        case .exportCookies: return [ExportCookiesParams()]
        case .forget: return [ForgetParams(target: .address("203.0.113.10")), ForgetParams(target: .all)]
        case .flushCache: return [FlushCacheParams(), FlushCacheParams(host: "a.example")]
        case .status: return [StatusParams()]
        case .showCache: return [ShowCacheParams()]
        case .statistics: return [StatisticsParams()]
        case .resetStatistics: return [ResetStatisticsParams()]
        case .metrics: return [MetricsParams()]
        case .monitor: return [MonitorParams()]
        case .discover: return [DiscoverParams()]
        }
    }

    @Test(arguments: Method.allCases)
    func resultsSatisfyTheResultSchema(_ method: Method) throws {
        let schema = try #require(try Self.method(method)["result"]?["schema"])
        for sample in try Self.sampleResults(method) {
            let encoded = try JSONParser.parse(sample.encoded, maxDepth: 128)
            #expect(SchemaChecker.violations(of: encoded, against: schema) == [], "\(method.rawValue): \(sample)")
            // And the client reads back what the daemon wrote.
            #expect(isSame(method.resultType.init(json: encoded), sample), "\(method.rawValue): \(sample)")
        }
    }

    /// The results written byte by byte for the request path write what their tables describe.
    @Test(arguments: Method.allCases)
    func resultsWriteWhatTheirTablesDescribe(_ method: Method) throws {
        for sample in try Self.sampleResults(method) {
            guard let described = sample as? any DescribedRecord else { continue }
            #expect(describedEncoding(described) == sample.encoded, "\(method.rawValue): \(sample)")
        }
    }

    /// The params read by hand on the request path read what their tables describe: the same
    /// value or the same error for the first example's params and for each documented param
    /// missing or replaced by values of every type, out of range and outside its set.
    @Test(arguments: Method.allCases)
    func paramsReadWhatTheirTablesDescribe(_ method: Method) throws {
        guard let type = method.paramsType as? any DescribedParams.Type else { return }
        let description = try Self.method(method)
        var valid = JSONObject()
        for param in description["examples"]?.arrayValue?.first?["params"]?.arrayValue ?? [] {
            valid[try #require(param["name"]?.stringValue)] = param["value"]
        }
        let values: [JSON] = [
            .null, true, false, 0, -1, 1, 60_000, 60_001, .number(JSONNumber(1.5)), "", "x", "both",
            "netscape", ["a"], [1], ["not": "a valid value"],
        ]
        var variants = [valid]
        for param in description["params"]?.arrayValue ?? [] {
            let name = try #require(param["name"]?.stringValue)
            var missing = valid
            missing[name] = nil
            variants.append(missing)
            for value in values {
                var changed = valid
                changed[name] = value
                variants.append(changed)
            }
        }
        for object in variants { expectSameReading(type, object, method) }
    }

    @Test(arguments: Method.allCases)
    func paramsSatisfyTheParamSchemas(_ method: Method) throws {
        let documented = try Self.method(method)["params"]?.arrayValue ?? []
        let schemas = Dictionary(
            uniqueKeysWithValues: documented.compactMap { p in p["name"]?.stringValue.map { ($0, p) } })
        for sample in Self.sampleParams(method) {
            let json = sample.json
            for member in json {
                let param = try #require(schemas[member.key], "\(method.rawValue) sends undocumented \(member.key)")
                let schema = try #require(param["schema"])
                #expect(
                    SchemaChecker.violations(of: member.value, against: schema, at: member.key) == [],
                    "\(method.rawValue): \(sample)")
            }
            for (name, param) in schemas where param["required"] == true {
                #expect(json[name] != nil, "\(method.rawValue) does not send required \(name)")
            }
            // And the daemon reads back what the client wrote.
            #expect(isSame(try method.paramsType.init(Params(json)), sample), "\(method.rawValue): \(sample)")
        }
    }

    /// A param the type did not read would be ignored as unknown: a wrongly typed value for it must
    /// be refused naming it, and a missing required one must be refused naming it.
    @Test(arguments: Method.allCases)
    func everyDocumentedParamIsRead(_ method: Method) throws {
        let description = try Self.method(method)
        var valid = JSONObject()
        for param in description["examples"]?.arrayValue?.first?["params"]?.arrayValue ?? [] {
            valid[try #require(param["name"]?.stringValue)] = param["value"]
        }
        for param in description["params"]?.arrayValue ?? [] {
            let name = try #require(param["name"]?.stringValue)
            var wrong = valid
            wrong[name] = ["not": "a valid value"]
            let error = rejection(method, wrong)
            #expect(error?.code == .invalidParams, "\(method.rawValue).\(name): \(String(describing: error))")
            #expect(error?.data["field"] == .string(name), "\(method.rawValue).\(name): \(String(describing: error))")
            if param["required"] == true {
                var missing = valid
                missing[name] = nil
                #expect(rejection(method, missing)?.data["field"] == .string(name), "\(method.rawValue).\(name)")
            }
        }
        #expect(rejection(method, valid) == nil, "\(method.rawValue): its own first example is refused")
    }

    /// The checker itself finds what it must: each of these breaks the resolve result schema.
    @Test func checkerFindsViolations() throws {
        let schema = try #require(try Self.method(.resolve)["result"]?["schema"])
        let good = ResolveResult(host: "a", ipv4: ["192.0.2.1"], ipv6: [], ttl: 1, stale: false, source: .cache).json
        #expect(SchemaChecker.violations(of: good, against: schema) == [])
        var bad: [JSON] = []
        for (key, value) in [
            ("ttl", JSON.int(-1)), ("ttl", .double(1.5)), ("source", "elsewhere"), ("ipv4", ["not an address"]),
            ("stale", "no"),
            ("extra", 1),
        ] as [(String, JSON)] {
            var object = try #require(good.objectValue)
            object[key] = value
            bad.append(.object(object))
        }
        var missing = try #require(good.objectValue)
        missing["host"] = nil
        bad.append(.object(missing))
        for value in bad {
            #expect(SchemaChecker.violations(of: value, against: schema) != [], "\(value.encodedString)")
        }
        #expect(SchemaChecker.violations(of: 1, against: ["type": "integer", "maximumLength": 3]) != [])
    }

    private func rejection(_ method: Method, _ object: JSONObject) -> RPCError? {
        do throws(RPCError) {
            _ = try method.paramsType.init(Params(object))
            return nil
        } catch {
            return error
        }
    }
}

/// Equal values of the same shape type (the shapes are Equatable; the samples are existentials).
func isSame(_ a: (any Equatable)?, _ b: any Equatable) -> Bool {
    func equal<T: Equatable>(_ b: T) -> Bool { (a as? T) == b }
    return equal(b)
}

/// The bytes a record's member table describes.
private func describedEncoding(_ record: some DescribedRecord) -> [UInt8] {
    var out = JSONOutput()
    record.writeDescribed(to: &out)
    return out.bytes
}

/// `init(_:)` and `init(_:afterFirst:)` read `object` as the table does.
private func expectSameReading<P: DescribedParams>(_: P.Type, _ object: JSONObject, _ method: Method) {
    let params = Params(object)
    #expect(
        reading { () throws(RPCError) in try P(params) } == reading { () throws(RPCError) in try P.described(params) },
        "\(method.rawValue): \(object)")
    #expect(
        reading { () throws(RPCError) in try P(params, afterFirst: ()) }
            == reading { () throws(RPCError) in try P.described(params, afterFirst: ()) },
        "\(method.rawValue) after the first member: \(object)")
}

private func reading<P: DescribedParams>(_ read: () throws(RPCError) -> P) -> Result<P, RPCError> {
    do throws(RPCError) { return .success(try read()) } catch { return .failure(error) }
}
