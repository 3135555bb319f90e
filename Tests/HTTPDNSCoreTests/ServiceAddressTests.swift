import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSCore

/// The service address state machine on a manual clock: scheduler rounds, rotation, backoff,
/// refresh, persisted lists, and what the scheduler's answers may hold.
struct ServiceAddressTests {
    let clock = ManualClock()
    let upstream = UpstreamEndpoint(kind: .alibaba, url: "http://127.0.0.2:8053/100000", name: "alibaba")
    var now: MonotonicInstant { MonotonicInstant(nanoseconds: clock.nowNanoseconds()) }
    var wallNow: Int64 { clock.wallMilliseconds() / 1_000 }

    func book(_ lines: String = "AlibabaRegion=cn\nAlibabaBootAddresses=127.0.0.3") throws -> ServiceAddressBook {
        let text = "[Resolver]\nUpstream=alibaba \(upstream.url!)\n" + lines
        let configuration = try DaemonConfiguration.parse(text: text, path: "test").get().0
        return ServiceAddressBook(
            ServiceAddressSettings(configuration.resolver), upstreams: configuration.resolver.upstreams)
    }

    func fetches(_ actions: [ServiceAddressAction]) -> [ServiceAddressFetch] {
        actions.compactMap { if case .fetch(let fetch) = $0 { return fetch } else { return nil } }
    }

    func addresses(_ texts: String...) -> Result<[IPAddress], UpstreamError> {
        .success(texts.compactMap { IPAddress($0) })
    }

    @Test func startsOnTheBootAddressesAndAsksTheSchedulerThere() throws {
        var book = try book()
        #expect(book.address(for: upstream, now: now) == "127.0.0.2")
        book.start(persisted: [], now: now, wallNow: wallNow)
        let fetch = try #require(fetches(book.takeActions()).first)
        #expect(fetch.address == "127.0.0.2")
        #expect(fetch.region == "cn")
        #expect(book.status(for: upstream, now: now)?.source == "boot")
        // The first boot address fails: the next is asked in the same round.
        book.fetchFinished(fetch.id, .failure(UpstreamError(.transport("refused"))), now: now, wallNow: wallNow)
        let second = try #require(fetches(book.takeActions()).first)
        #expect(second.address == "127.0.0.3")
        book.fetchFinished(second.id, addresses("127.0.0.4", "127.0.0.5"), now: now, wallNow: wallNow)
        let actions = book.takeActions()
        #expect(
            actions.contains(
                .persist([
                    PersistedServiceAddresses(
                        key: ServiceAddressBook.key(upstream, region: "cn"), addresses: ["127.0.0.4", "127.0.0.5"],
                        fetchedAt: wallNow)
                ])))
        #expect(book.address(for: upstream, now: now) == "127.0.0.4")
        let status = try #require(book.status(for: upstream, now: now))
        #expect(status.source == "scheduler")
        #expect(status.addresses.map(\.address) == ["127.0.0.4", "127.0.0.5"])
        #expect(status.nextRefresh == 21_600)
        // The next round starts at the boot address that answered.
        clock.advance(milliseconds: 21_600_000)
        book.timerFired(key: ServiceAddressBook.key(upstream, region: "cn"), now: now)
        #expect(fetches(book.takeActions()).first?.address == "127.0.0.3")
    }

    @Test func rotatesAfterThreeFailuresInARowAndRetriesAfterTheBackoff() throws {
        var book = try book("TencentBackupAddresses=127.0.0.3 127.0.0.4")
        let tencent = UpstreamEndpoint(kind: .tencent, url: "http://127.0.0.2:8053", name: "tencent")
        book = ServiceAddressBook(book.settings, upstreams: [tencent])
        #expect(book.address(for: tencent, now: now) == "127.0.0.2")
        // A success between failures resets the count.
        book.failed(tencent, address: "127.0.0.2", error: "refused", now: now)
        book.failed(tencent, address: "127.0.0.2", error: "refused", now: now)
        book.succeeded(tencent, address: "127.0.0.2", now: now)
        book.failed(tencent, address: "127.0.0.2", error: "refused", now: now)
        book.failed(tencent, address: "127.0.0.2", error: "refused", now: now)
        #expect(book.address(for: tencent, now: now) == "127.0.0.2")
        book.failed(tencent, address: "127.0.0.2", error: "refused", now: now)
        #expect(book.address(for: tencent, now: now) == "127.0.0.3")
        #expect(book.takeActions().contains { if case .log(.warning, _) = $0 { true } else { false } })
        #expect(book.status(for: tencent, now: now)?.addresses.first?.backingOff == true)
        // Late failures of an address no longer current do not move the current one.
        for _ in 0..<3 { book.failed(tencent, address: "127.0.0.4", error: "refused", now: now) }
        #expect(book.address(for: tencent, now: now) == "127.0.0.3")
        for _ in 0..<3 { book.failed(tencent, address: "127.0.0.3", error: "HTTP status 500", now: now) }
        // Every address backs off: the one whose backoff ends first is used.
        #expect(book.address(for: tencent, now: now) == "127.0.0.2")
        clock.advance(milliseconds: 30_000)
        #expect(book.status(for: tencent, now: now)?.addresses[0].backingOff == false)
        // A second rotation without an answer in between doubles the backoff.
        for _ in 0..<3 { book.failed(tencent, address: "127.0.0.2", error: "refused", now: now) }
        #expect(ServiceAddressBook.retrySeconds(afterRotations: 2) == 60)
        clock.advance(milliseconds: 59_000)
        #expect(book.status(for: tencent, now: now)?.addresses[0].backingOff == true)
        #expect(
            (1...8).map { ServiceAddressBook.retrySeconds(afterRotations: $0) } == [
                30, 60, 120, 240, 480, 600, 600, 600,
            ])
    }

    @Test func aPersistedListIsPreferredToTheBootAddressesAndRefreshedWhenDue() throws {
        var book = try book()
        let key = ServiceAddressBook.key(upstream, region: "cn")
        let saved = PersistedServiceAddresses(key: key, addresses: ["127.0.0.9"], fetchedAt: wallNow - 3_600)
        book.start(persisted: [saved], now: now, wallNow: wallNow)
        // Five hours of the six are left: no request now, a timer then.
        let actions = book.takeActions()
        #expect(fetches(actions).isEmpty)
        #expect(actions == [.armTimer(key: key, at: now.advanced(bySeconds: 5 * 3_600))])
        #expect(book.address(for: upstream, now: now) == "127.0.0.9")
        #expect(book.status(for: upstream, now: now)?.source == "persisted")
        // Another upstream's (or region's) list is not taken.
        var other = try self.book()
        other.start(
            persisted: [PersistedServiceAddresses(key: key + "x", addresses: ["127.0.0.9"], fetchedAt: wallNow)],
            now: now, wallNow: wallNow)
        #expect(other.address(for: upstream, now: now) == "127.0.0.2")
        #expect(fetches(other.takeActions()).count == 1)
        // A saved list older than the refresh interval is used while the scheduler is asked.
        var old = try self.book()
        old.start(
            persisted: [PersistedServiceAddresses(key: key, addresses: ["127.0.0.9"], fetchedAt: wallNow - 30_000)],
            now: now, wallNow: wallNow)
        #expect(fetches(old.takeActions()).count == 1)
        #expect(old.address(for: upstream, now: now) == "127.0.0.9")
    }

    @Test func aRoundThatGetsNoAnswerIsRetriedAfterFiveMinutesKeepingTheList() throws {
        var book = try book()
        book.start(persisted: [], now: now, wallNow: wallNow)
        let key = ServiceAddressBook.key(upstream, region: "cn")
        for _ in 0..<2 {
            let fetch = try #require(fetches(book.takeActions()).first)
            book.fetchFinished(fetch.id, .failure(UpstreamError(.httpStatus(503))), now: now, wallNow: wallNow)
        }
        let actions = book.takeActions()
        #expect(actions.contains(.armTimer(key: key, at: now.advanced(bySeconds: 300))))
        let status = try #require(book.status(for: upstream, now: now))
        #expect(status.schedulerError == "127.0.0.3: HTTP status 503")
        #expect(status.source == "boot")
        // Early timers (a reload's, say) do nothing; the due one starts a round.
        clock.advance(milliseconds: 299_000)
        book.timerFired(key: key, now: now)
        #expect(fetches(book.takeActions()).isEmpty)
        clock.advance(milliseconds: 1_000)
        book.timerFired(key: key, now: now)
        #expect(fetches(book.takeActions()).count == 1)
    }

    @Test func everyAddressBackingOffAsksTheSchedulerEarlyAtMostEveryThirtySeconds() throws {
        var book = try book()
        book.start(persisted: [], now: now, wallNow: wallNow)
        let fetch = try #require(fetches(book.takeActions()).first)
        book.fetchFinished(fetch.id, addresses("127.0.0.4"), now: now, wallNow: wallNow)
        _ = book.takeActions()
        clock.advance(milliseconds: 10_000)
        for _ in 0..<3 { book.failed(upstream, address: "127.0.0.4", error: "refused", now: now) }
        // Within 30 s of the last round: no new one.
        #expect(fetches(book.takeActions()).isEmpty)
        clock.advance(milliseconds: 30_000)
        for _ in 0..<3 { book.failed(upstream, address: "127.0.0.4", error: "refused", now: now) }
        #expect(fetches(book.takeActions()).count == 1)
    }

    @Test func anAnswerKeepsTheCurrentAddressAndTheStateOfThoseItKeeps() throws {
        var book = try book()
        book.start(persisted: [], now: now, wallNow: wallNow)
        var fetch = try #require(fetches(book.takeActions()).first)
        book.fetchFinished(fetch.id, addresses("127.0.0.4", "127.0.0.5", "127.0.0.6"), now: now, wallNow: wallNow)
        for _ in 0..<3 { book.failed(upstream, address: "127.0.0.4", error: "refused", now: now) }
        #expect(book.address(for: upstream, now: now) == "127.0.0.5")
        clock.advance(milliseconds: 21_600_000)
        book.timerFired(key: ServiceAddressBook.key(upstream, region: "cn"), now: now)
        fetch = try #require(fetches(book.takeActions()).first)
        book.fetchFinished(fetch.id, addresses("127.0.0.6", "127.0.0.5"), now: now, wallNow: wallNow)
        #expect(book.address(for: upstream, now: now) == "127.0.0.5")
        #expect(book.status(for: upstream, now: now)?.addresses.map(\.address) == ["127.0.0.6", "127.0.0.5"])
    }

    @Test func malformedAndHostileSchedulerAnswersAreRefusedWhole() {
        func parse(_ body: String, status: Int = 200) -> Result<[IPAddress], UpstreamError> {
            AlibabaScheduler.parse(status: status, body: Array(body.utf8))
        }
        #expect(
            (try? parse(#"{"service_ip":["127.0.0.4","127.0.0.4"],"service_ipv6":["::1"]}"#).get())
                == [IPAddress("127.0.0.4")!, IPAddress("::1")!])
        for hostile in [
            #"{"service_ip":["127.0.0.4","evil.example"]}"#,
            #"{"service_ip":["127.0.0.4/24"]}"#,
            #"{"service_ip":["::1"]}"#,
            #"{"service_ipv6":["127.0.0.4"]}"#,
            #"{"service_ip":["0.0.0.0"]}"#,
            #"{"service_ip":["224.0.0.1"]}"#,
            #"{"service_ip":["255.255.255.255"]}"#,
            #"{"service_ipv6":["ff02::1"]}"#,
            #"{"service_ip":[4]}"#,
            #"{"service_ip":"127.0.0.4"}"#,
            #"{"service_ip":[]}"#,
            #"{}"#,
            #"["127.0.0.4"]"#,
            "not json",
            "{\"service_ip\":[" + (0...32).map { "\"127.0.1.\($0)\"" }.joined(separator: ",") + "]}",
        ] {
            guard case .failure(let error) = parse(hostile) else {
                Issue.record("taken: \(hostile)")
                continue
            }
            #expect(error.isServiceAddressLevel, "\(hostile)")
        }
        let big = "{\"service_ip\":[\"127.0.0.4\"],\"pad\":\"" + String(repeating: "x", count: 20_000) + "\"}"
        #expect(parse(big) == .failure(UpstreamError(.responseTooLarge)))
        #expect(
            parse(#"{"code":"InvalidAccount"}"#, status: 403)
                == .failure(UpstreamError(.serviceError(code: "InvalidAccount"))))
        #expect(parse("", status: 500) == .failure(UpstreamError(.httpStatus(500))))
    }

    @Test func theSchedulerRequestTakesTheBootAddressAndIsSignedWithASecret() {
        let plain = AlibabaScheduler.request(
            baseURL: "https://127.0.0.2:8443/100000/", address: "::1", region: "cn", secret: nil, now: 1_000,
            nonce: "ab")
        #expect(plain.url == "https://[::1]:8443/100000/ss?region=cn&platform=linux")
        let signed = AlibabaScheduler.request(
            baseURL: "http://127.0.0.2/100000", address: "127.0.0.3", region: "hk", secret: "s3", now: 1_000,
            nonce: "ab")
        #expect(
            signed.url == "http://127.0.0.3/100000/ss?region=hk&platform=linux&n=ab&t=1000&s="
                + MD5.hexDigest("ab-s3-1000"))
        #expect(ServiceURL.replacingHost(of: "http://[::1]:80/1", with: "127.0.0.9") == "http://127.0.0.9/1")
        #expect(ServiceURL.replacingHost(of: "https://127.0.0.2:8443", with: "::1") == "https://[::1]:8443")
        #expect(ServiceURL.replacingHost(of: "http://u@127.0.0.2/", with: "::1") == nil)
        #expect(ServiceURL.host(of: "https://[::1]/1") == "::1")
    }

    @Test func theSavedFileRoundTripsAndAnythingElseIsIgnored() {
        let lists = [
            PersistedServiceAddresses(
                key: "alibaba http://x/1 region=cn", addresses: ["127.0.0.4", "::1"], fetchedAt: 5)
        ]
        #expect(ServiceAddressFile.decode(ServiceAddressFile.encode(lists)) == lists)
        for bad in [
            #"{"version":2,"lists":[]}"#, #"{"version":1,"lists":[{"key":"k","addresses":["evil"],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":[],"fetchedAt":1}]}"#, "{", "",
        ] {
            #expect(ServiceAddressFile.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    /// The file's bytes, pinned: one line, at most `maxLists` lists, each key escaped.
    @Test func theSavedFileIsOneLineOfPinnedBytes() {
        let lists = [
            PersistedServiceAddresses(key: "alibaba http://x/1 region=\"cn\"", addresses: ["127.0.0.4"], fetchedAt: 5),
            PersistedServiceAddresses(key: "", addresses: ["::1", "127.0.0.5"], fetchedAt: -1),
        ]
        #expect(
            String(decoding: ServiceAddressFile.encode(lists), as: UTF8.self)
                == #"{"version":1,"lists":[{"key":"alibaba http://x/1 region=\"cn\"","addresses":["127.0.0.4"],"#
                + #""fetchedAt":5},{"key":"","addresses":["::1","127.0.0.5"],"fetchedAt":-1}]}"# + "\n")
        #expect(String(decoding: ServiceAddressFile.encode([]), as: UTF8.self) == #"{"version":1,"lists":[]}"# + "\n")
        let many = (0...ServiceAddressFile.maxLists).map {
            PersistedServiceAddresses(key: "k\($0)", addresses: ["127.0.0.4"], fetchedAt: 1)
        }
        #expect(
            ServiceAddressFile.decode(ServiceAddressFile.encode(many))
                == Array(many.prefix(ServiceAddressFile.maxLists)))
    }

    /// Each of these files is ignored whole (a member missing, of another type or out of bounds);
    /// a usable one has its addresses deduplicated and written canonically.
    @Test func theSavedFileReaderChecksEveryMember() {
        let list = #"{"key":"k","addresses":["127.0.0.4"],"fetchedAt":1}"#
        for bad in [
            "[]", #"{"lists":[]}"#, #"{"version":"1","lists":[]}"#, #"{"version":1}"#, #"{"version":1,"lists":{}}"#,
            #"{"version":1,"lists":[1]}"#, #"{"version":1,"lists":[{"addresses":["127.0.0.4"],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":1,"addresses":["127.0.0.4"],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":["127.0.0.4"]}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":["127.0.0.4"],"fetchedAt":1.5}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":"127.0.0.4","fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":[4],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":"k","addresses":["0.0.0.0"],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":[{"key":""# + String(repeating: "k", count: 4_097)
                + #"","addresses":["127.0.0.4"],"fetchedAt":1}]}"#,
            #"{"version":1,"lists":["#
                + Array(repeating: list, count: ServiceAddressFile.maxLists + 1)
                .joined(separator: ",") + "]}",
        ] {
            #expect(ServiceAddressFile.decode(Array(bad.utf8)) == nil, "\(bad.prefix(120))")
        }
        let mended = #"{"version":1,"lists":[{"key":"k","addresses":["::0:1","::1","127.0.0.4"],"fetchedAt":1}]}"#
        #expect(
            ServiceAddressFile.decode(Array(mended.utf8))
                == [PersistedServiceAddresses(key: "k", addresses: ["::1", "127.0.0.4"], fetchedAt: 1)])
    }

    @Test func withoutARegionAlibabaKeepsItsURLAndOtherKindsHaveNoList() throws {
        var book = try book("")
        #expect(book.address(for: upstream, now: now) == nil)
        book.start(persisted: [], now: now, wallNow: wallNow)
        #expect(!book.hasActions)
        #expect(book.status(for: upstream, now: now) == nil)
    }

    @Test func aReloadKeepsAnUnchangedListAndRestartsAChangedOne() throws {
        var book = try book()
        book.start(persisted: [], now: now, wallNow: wallNow)
        let fetch = try #require(fetches(book.takeActions()).first)
        book.fetchFinished(fetch.id, addresses("127.0.0.4"), now: now, wallNow: wallNow)
        _ = book.takeActions()
        book.apply(try self.book().settings, upstreams: [upstream], now: now, wallNow: wallNow)
        #expect(!book.hasActions)
        #expect(book.address(for: upstream, now: now) == "127.0.0.4")
        // Other boot addresses: the list starts again, from its saved answer.
        book.apply(
            try self.book("AlibabaRegion=cn\nAlibabaBootAddresses=127.0.0.7").settings, upstreams: [upstream],
            now: now, wallNow: wallNow)
        #expect(book.address(for: upstream, now: now) == "127.0.0.4")
        #expect(book.status(for: upstream, now: now)?.source == "persisted")
    }
}
