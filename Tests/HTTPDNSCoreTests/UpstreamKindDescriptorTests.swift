import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// The descriptors' exchanges over a scripted transport on the manual clock: what each asks,
/// within which deadline, and what it makes of the answers.
struct UpstreamKindDescriptorTests {
    static let host = "a.example.com"

    /// The value of `name` in `url`'s query, as sent (still percent-encoded).
    static func query(_ url: String, _ name: String) -> String? {
        guard let question = url.firstIndex(of: "?") else { return nil }
        for pair in url[url.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    static func dohJSON(type: Int, _ address: String, ttl: Int) -> String {
        #"{"Status":0,"Answer":[{"name":"a.example.com","type":\#(type),"TTL":\#(ttl),"data":"\#(address)"}]}"#
    }

    static func resolve(
        _ endpoint: UpstreamEndpoint, family: AddressFamily = .both, timeoutMs: Int = 1_000,
        settings: UpstreamQuerySettings = UpstreamQuerySettings(), over transport: ScriptedExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        endpoint.descriptor.resolve(
            host, family: family, at: endpoint, timeoutMs: timeoutMs, settings: settings, over: transport)
    }

    // MARK: which descriptor

    @Test func theFilesSettingsGiveEachUpstreamItsFormsDescriptor() throws {
        let upstreams = """
            [Resolver]
            Upstream=alibaba http://127.0.0.1:8053/100000
            Upstream=tencent http://127.0.0.1:8054
            Upstream=tencent https://127.0.0.1:8443
            Upstream=doh https://127.0.0.1:8443/dns-query
            Upstream=doh-json https://127.0.0.1:8443/resolve
            Upstream=system

            """
        let paid = "TencentAuthId=1\nTencentKey=12345678\nTencentToken=t0ken\n"
        let v2 = "AlibabaAPI=v2\nSecretKey=\(AlibabaV2Tests.secret)\n"
        func descriptors(_ text: String) throws -> [any UpstreamKindDescriptor] {
            try DaemonConfiguration.parse(text: text, path: "/x.conf").get().0.resolver.upstreams.map(\.descriptor)
        }

        let plain = try descriptors(upstreams)
        #expect(plain[0] is AlibabaV1Kind && plain[1] is TencentFreeKind && plain[2] is TencentFreeKind)
        #expect(plain[3] is DoHWireKind && plain[4] is DoHJSONKind && plain[5] is SystemKind)
        #expect(plain.map(\.batchesPrefetch) == [true, false, false, false, false, false])

        let forms = try descriptors(upstreams + paid + v2)
        #expect(forms[0] is AlibabaV2Kind)
        #expect(forms[1...2].map { ($0 as? TencentPaidKind)?.form } == [.des, .token])
        #expect(forms.map(\.batchesPrefetch) == [true, true, true, false, false, false])
        #expect(forms.map(\.isBilled) == [true, true, true, false, false, false])
        #expect(forms.map(\.serviceAddresses) == [.scheduler, .backups, .backups, .url, .url, .url])
        #expect(forms.map(\.answerSource) == [.upstream, .upstream, .upstream, .upstream, .upstream, .system])
        #expect(forms.map(\.needsURL) == [true, true, true, true, true, false])
    }

    // MARK: DoH: A then AAAA within one deadline

    let dohJSON = UpstreamEndpoint(kind: .dohJSON, url: "https://127.0.0.1:8443/resolve", name: "doh-json")

    @Test func dohAsksAThenAAAAWithWhatIsLeftOfOneDeadline() throws {
        let transport = ScriptedExchangeTransport([
            .ok(Self.dohJSON(type: 1, "203.0.113.1", ttl: 120), after: 700),
            .ok(Self.dohJSON(type: 28, "2001:db8::1", ttl: 30), after: 100),
        ])
        let answer = try Self.resolve(dohJSON, timeoutMs: 1_000, over: transport).get()
        #expect(transport.sent.map { Self.query($0.request.url, "type") } == ["1", "28"])
        #expect(transport.sent.map(\.timeoutMs) == [1_000, 300])
        #expect(answer.ipv4 == [IPAddress("203.0.113.1")!] && answer.ipv6 == [IPAddress("2001:db8::1")!])
        // Each family keeps its own query's TTL.
        #expect(answer.ipv4TTL == 120 && answer.ipv6TTL == 30)
    }

    @Test func anAnswerAtTheDeadlineLeavesNoTimeForAAAA() {
        let transport = ScriptedExchangeTransport([
            .ok(Self.dohJSON(type: 1, "203.0.113.1", ttl: 120), after: 1_000),
            .ok(Self.dohJSON(type: 28, "2001:db8::1", ttl: 30)),
        ])
        #expect(Self.resolve(dohJSON, timeoutMs: 1_000, over: transport) == .failure(UpstreamError(.timeout)))
        #expect(transport.sent.count == 1)
    }

    @Test func theFirstTypesFailureEndsTheExchange() {
        let transport = ScriptedExchangeTransport([
            .init(takesMs: 5, result: .success(UpstreamHTTPResponse(status: 503, body: []))),
            .ok(Self.dohJSON(type: 28, "2001:db8::1", ttl: 30)),
        ])
        #expect(Self.resolve(dohJSON, over: transport) == .failure(UpstreamError(.httpStatus(503))))
        #expect(transport.sent.count == 1)
    }

    @Test func oneFamilyIsOneQuery() throws {
        let transport = ScriptedExchangeTransport([.ok(Self.dohJSON(type: 28, "2001:db8::1", ttl: 30))])
        let answer = try Self.resolve(dohJSON, family: .ipv6, over: transport).get()
        #expect(transport.sent.map { Self.query($0.request.url, "type") } == ["28"])
        #expect(answer.ipv4.isEmpty && answer.ipv6 == [IPAddress("2001:db8::1")!])
    }

    @Test func rfc8484QueriesArePostedWhenDoHPostIsSet() {
        let doh = UpstreamEndpoint(kind: .doh, url: "https://127.0.0.1:8443/dns-query", name: "doh")
        for post in [false, true] {
            let transport = ScriptedExchangeTransport()
            _ = Self.resolve(doh, family: .ipv4, settings: UpstreamQuerySettings(dohPost: post), over: transport)
            let request = transport.sent.first?.request
            #expect(request?.method == (post ? .post : .get))
            #expect(request?.body == (post ? DNSWire.makeQuery(host: Self.host, type: .a) : []))
            #expect((request?.url.contains("dns=") ?? false) == !post)
        }
    }

    // MARK: Alibaba v2: the clock correction

    static let wallStart: Int64 = 1_767_225_600

    var alibabaV2: UpstreamEndpoint {
        var endpoint = UpstreamEndpoint(kind: .alibaba, url: "http://127.0.0.1:8053/100000", name: "alibaba")
        endpoint.alibabaAPI = .v2
        return endpoint
    }

    let v2Settings = UpstreamQuerySettings(secretKey: AlibabaV2Tests.secret)

    static let expired = #"{"code":"SignatureExpired"}"#
    static let v2Answer =
        #"{"code":"success","data":{"answers":[{"dn":"a.example.com","v4":{"ips":["203.0.113.7"],"ttl":90}}]}}"#
    /// An hour after the manual clock's start, as the service's `Date` would say.
    static let anHourAhead = [UpstreamHeader("Date", "Thu, 01 Jan 2026 01:00:00 GMT")]

    @Test func anExpiredSignatureCorrectsTheServiceClockAndIsAskedAgainOnce() throws {
        let transport = ScriptedExchangeTransport([
            .ok(Self.expired, after: 200, headers: Self.anHourAhead), .ok(Self.v2Answer, after: 100),
        ])
        let answer = try Self.resolve(alibabaV2, family: .ipv4, settings: v2Settings, over: transport).get()
        #expect(answer.ipv4 == [IPAddress("203.0.113.7")!] && answer.ipv4TTL == 90)
        #expect(transport.serviceClockOffset == 3_600)
        #expect(
            transport.sent.map { Self.query($0.request.url, "exp") } == [
                String(Self.wallStart + AlibabaV2.signatureLifetime),
                String(Self.wallStart + 3_600 + AlibabaV2.signatureLifetime),
            ])
        // The second request has what is left of the one deadline.
        #expect(transport.sent.map(\.timeoutMs) == [1_000, 800])
    }

    @Test func theCorrectionIsMadeOnceAndALaterExchangeStartsFromIt() {
        let transport = ScriptedExchangeTransport([
            .ok(Self.expired, headers: Self.anHourAhead), .ok(Self.expired, headers: Self.anHourAhead),
        ])
        #expect(
            Self.resolve(alibabaV2, settings: v2Settings, over: transport)
                == .failure(UpstreamError(.serviceError(code: AlibabaV2.expiredSignatureCode))))
        #expect(transport.sent.count == 2)

        transport.steps = [.ok(Self.v2Answer)]
        transport.serviceClockOffset = -120
        _ = Self.resolve(alibabaV2, settings: v2Settings, over: transport)
        #expect(
            transport.sent.last.flatMap { Self.query($0.request.url, "exp") }
                == String(Self.wallStart - 120 + AlibabaV2.signatureLifetime))
    }

    @Test func anExpiredSignatureWithoutADateIsNotAskedAgain() {
        let transport = ScriptedExchangeTransport([.ok(Self.expired), .ok(Self.v2Answer)])
        #expect(
            Self.resolve(alibabaV2, settings: v2Settings, over: transport)
                == .failure(UpstreamError(.serviceError(code: AlibabaV2.expiredSignatureCode))))
        #expect(transport.sent.count == 1 && transport.serviceClockOffset == 0)
    }

    @Test func v2WithoutASecretAsksNothing() {
        let transport = ScriptedExchangeTransport([.ok(Self.v2Answer)])
        guard case .failure(let error) = Self.resolve(alibabaV2, over: transport) else {
            Issue.record("answered without a secret")
            return
        }
        #expect(error.description.contains("secret"))
        #expect(transport.sent.isEmpty)
    }

    @Test func aNameV2LeftOutHasNoAddress() throws {
        let other = #"{"code":"success","data":{"answers":[{"dn":"b.example.com","v4":{"ips":["203.0.113.8"]}}]}}"#
        let transport = ScriptedExchangeTransport([.ok(other)])
        let answer = try Self.resolve(alibabaV2, settings: v2Settings, over: transport).get()
        #expect(answer.isEmpty && answer.nameExists)
    }

    // MARK: batches

    @Test func alibabaV1BatchesAskResolveAndParseEachName() throws {
        let endpoint = UpstreamEndpoint(kind: .alibaba, url: "http://127.0.0.1:8053/100000", name: "alibaba")
        let body = """
            {"dns":[{"host":"a.example.com","ips":["203.0.113.1"],"ttl":60},
             {"host":"B.example.com","ipsv6":["2001:db8::2"],"ttl":30}]}
            """
        let transport = ScriptedExchangeTransport([.ok(body)])
        let answers = try endpoint.descriptor.resolveBatch(
            ["a.example.com", "b.example.com", "c.example.com"], at: endpoint, timeoutMs: 900,
            settings: UpstreamQuerySettings(), over: transport
        ).get()
        #expect(
            transport.sent.map(\.request.url) == [
                "http://127.0.0.1:8053/100000/resolve?host=a.example.com,b.example.com,c.example.com&query=4,6"
            ])
        #expect(transport.sent.map(\.timeoutMs) == [900])
        #expect(Set(answers.keys) == ["a.example.com", "b.example.com"])
        #expect(answers["a.example.com"]?.ipv4 == [IPAddress("203.0.113.1")!])
        #expect(answers["b.example.com"]?.ipv6 == [IPAddress("2001:db8::2")!])
    }

    @Test func alibabaV2BatchesSignTheJoinedNames() throws {
        let transport = ScriptedExchangeTransport([.ok(Self.v2Answer)])
        let answers = try alibabaV2.descriptor.resolveBatch(
            ["a.example.com", "b.example.com"], at: alibabaV2, timeoutMs: 1_000, settings: v2Settings,
            over: transport
        ).get()
        let url = try #require(transport.sent.first?.request.url)
        #expect(url.hasPrefix("http://127.0.0.1:8053/v2/d?id=100000&m=0&dn=a.example.com%2Cb.example.com&q=4%2C6"))
        #expect(Set(answers.keys) == ["a.example.com"])
    }

    @Test func tencentTokenBatchesAskDnAndReadOneLinePerName() throws {
        var endpoint = UpstreamEndpoint(kind: .tencent, url: "https://127.0.0.1:8443", name: "tencent")
        endpoint.tencentForm = .token
        var account = TencentAccount()
        account.token = ConfigSecret("t0ken")
        let body = "a.example.com.:203.0.113.1;203.0.113.3,60-2001:db8::1,30\nb.example.com.:\n"
        let transport = ScriptedExchangeTransport([.ok(body)])
        let answers = try endpoint.descriptor.resolveBatch(
            ["a.example.com", "b.example.com"], at: endpoint, timeoutMs: 1_000,
            settings: UpstreamQuerySettings(tencent: account), over: transport
        ).get()
        #expect(
            transport.sent.map(\.request.url) == [
                "https://127.0.0.1:8443/d?dn=a.example.com,b.example.com&token=t0ken&ttl=1&type=addrs"
            ])
        #expect(Set(answers.keys) == ["a.example.com"])
        let a = try #require(answers["a.example.com"])
        #expect(a.ipv4.count == 2 && a.ipv4TTL == 60 && a.ipv6TTL == 30)
    }

    @Test func aPaidFormWithoutItsCredentialAndTheFreeFormAskNothingInABatch() {
        var des = UpstreamEndpoint(kind: .tencent, url: "http://127.0.0.1:8053", name: "tencent")
        des.tencentForm = .des
        let free = UpstreamEndpoint(kind: .tencent, url: "http://127.0.0.1:8053", name: "tencent")
        for endpoint in [des, free] {
            let transport = ScriptedExchangeTransport([.ok("")])
            let result = endpoint.descriptor.resolveBatch(
                [Self.host], at: endpoint, timeoutMs: 1_000, settings: UpstreamQuerySettings(), over: transport)
            guard case .failure(let error) = result, case .transport = error.code else {
                Issue.record("\(endpoint.tencentForm): \(result)")
                continue
            }
            #expect(transport.sent.isEmpty)
        }
    }

    // MARK: the system resolver

    @Test func theSystemResolverIsAskedForTheFamilyAndAnswersWithTheDefaultTTL() throws {
        let transport = ScriptedExchangeTransport()
        transport.lookups[Self.host] = .success(
            .addresses([IPAddress("203.0.113.9")!, IPAddress("2001:db8::9")!]))
        transport.lookups["gone.example.com"] = .success(.noSuchHost)
        let answer = try Self.resolve(.system, family: .ipv4, over: transport).get()
        #expect(answer.ipv4 == [IPAddress("203.0.113.9")!] && answer.ipv6.isEmpty)
        #expect(answer.ttl == UpstreamAnswer.defaultTTL)
        #expect(transport.lookedUp.map(\.0) == [Self.host] && transport.lookedUp.map(\.1) == [.ipv4])
        let gone = try UpstreamEndpoint.system.descriptor.resolve(
            "gone.example.com", family: .both, at: .system, timeoutMs: 1_000, settings: UpstreamQuerySettings(),
            over: transport
        ).get()
        #expect(!gone.nameExists)
        #expect(transport.sent.isEmpty)
    }
}
