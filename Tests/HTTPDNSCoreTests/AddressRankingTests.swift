import HTTPDNSProtocol
import Testing

@testable import HTTPDNSCore

/// `RankPorts=` policy (issue 29), on explicit instants: replies are ordered by what probes
/// measured, never waiting for one; rounds start at most once per TTL; probes are charged to the
/// uid whose resolve started them, within caps per uid and in total.
struct AddressRankingTests {
    static let start = MonotonicInstant(seconds: 100)

    static func answer(
        _ host: String = "www.example.com", v4: [String] = [], v6: [String] = [], ttl: Int = 60,
        source: ResolveResult.Source = .upstream
    ) -> ResolveResult {
        ResolveResult(host: host, ipv4: v4, ipv6: v6, ttl: ttl, stale: false, source: source)
    }

    /// Ranks `result` for `uid` at `now`, returning the reordered reply and the probes.
    static func rank(
        _ ranking: inout AddressRanking, _ result: ResolveResult, uid: UInt32 = 1000, at now: MonotonicInstant
    ) -> (ResolveResult, [ConnectProbeRequest]) {
        var result = result
        let probes = ranking.rank(&result, uid: uid, now: now)
        return (result, probes)
    }

    /// Finishes the probe of `address` `milliseconds` after `start` (nil: unreachable).
    static func finish(
        _ ranking: inout AddressRanking, _ probes: [ConnectProbeRequest], _ address: String, afterMs milliseconds: Int?
    ) throws {
        let probe = try #require(probes.first { $0.address.description == address })
        ranking.probeFinished(
            probe.id, connected: milliseconds != nil, now: start.advanced(byMilliseconds: milliseconds ?? 2_000))
    }

    @Test func theFirstAnswerGoesOutAsItCameAndStartsOneProbePerAddress() {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        let given = Self.answer(v4: ["192.0.2.1", "192.0.2.2", "192.0.2.3"], v6: ["2001:db8::1"])
        let (reply, probes) = Self.rank(&ranking, given, at: Self.start)
        #expect(reply == given, "nothing measured yet: the upstream's order")
        #expect(probes.map(\.address.description) == ["192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::1"])
        #expect(probes.allSatisfy { $0.port == 443 && $0.timeoutMs == 2_000 })
        #expect(Set(probes.map(\.id)).count == 4)
        #expect(ranking.runningProbes == 4 && ranking.runningProbes(of: 1000) == 4)
        // Another host, literals and Static= answers are never probed.
        var fresh = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        #expect(Self.rank(&fresh, Self.answer("other.example.com", v4: ["192.0.2.9"]), at: Self.start).1.isEmpty)
        for source in [ResolveResult.Source.static, .literal] {
            #expect(Self.rank(&fresh, Self.answer(v4: ["192.0.2.9"], source: source), at: Self.start).1.isEmpty)
        }
        #expect(fresh.runningProbes == 0)
    }

    /// Fastest first (whole milliseconds), then the addresses not measured, then the unreachable
    /// ones; equal ranks keep the answer's order.
    @Test func repliesAreOrderedByConnectTimeWithUnreachableAddressesLast() throws {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        let addresses = ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"]
        let (_, probes) = Self.rank(&ranking, Self.answer(v4: addresses), at: Self.start)
        try Self.finish(&ranking, probes, "192.0.2.1", afterMs: nil)
        try Self.finish(&ranking, probes, "192.0.2.2", afterMs: 40)
        try Self.finish(&ranking, probes, "192.0.2.3", afterMs: 5)
        try Self.finish(&ranking, probes, "192.0.2.4", afterMs: 40)
        // 192.0.2.5's probe is still running: not measured.
        let later = Self.start.advanced(bySeconds: 1)
        let (reply, again) = Self.rank(&ranking, Self.answer(v4: addresses + ["192.0.2.6"]), at: later)
        #expect(reply.ipv4 == ["192.0.2.3", "192.0.2.2", "192.0.2.4", "192.0.2.5", "192.0.2.6", "192.0.2.1"])
        #expect(again.isEmpty, "a round is running and the TTL is not over")
        #expect(ranking.runningProbes(of: 1000) == 1)
        #expect(
            AddressRanking.order(["a", "b", "c"], by: ["a": .unreachable, "c": .connected(milliseconds: 3)])
                == ["c", "b", "a"])
        #expect(
            AddressRanking.order(["a", "b"], by: ["a": .connected(milliseconds: 3), "b": .connected(milliseconds: 3)])
                == ["a", "b"], "a tie keeps the answer's order")
    }

    /// A new round starts once the TTL of the answer that started the last one is over (never
    /// sooner than the minimum interval), and only once its probes are all back; it probes only
    /// the new answer's addresses and forgets the ones the name lost.
    @Test func aNameIsRankedAgainAtMostOncePerTTL() throws {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        let (_, first) = Self.rank(&ranking, Self.answer(v4: ["192.0.2.1", "192.0.2.2"], ttl: 30), at: Self.start)
        try Self.finish(&ranking, first, "192.0.2.1", afterMs: 50)
        try Self.finish(&ranking, first, "192.0.2.2", afterMs: 10)
        for seconds in [1, 10, 29] {
            let (reply, probes) = Self.rank(
                &ranking, Self.answer(v4: ["192.0.2.1", "192.0.2.2"], ttl: 30),
                at: Self.start.advanced(bySeconds: seconds))
            #expect(probes.isEmpty, "\(seconds) s: within the TTL")
            #expect(reply.ipv4 == ["192.0.2.2", "192.0.2.1"])
        }
        let due = Self.start.advanced(bySeconds: 30)
        let (reply, second) = Self.rank(&ranking, Self.answer(v4: ["192.0.2.1", "192.0.2.3"], ttl: 1), at: due)
        #expect(reply.ipv4 == ["192.0.2.1", "192.0.2.3"], "192.0.2.1 measured, 192.0.2.3 not yet")
        #expect(second.map(\.address.description) == ["192.0.2.1", "192.0.2.3"], "only this answer's addresses")
        #expect(
            ranking.rankings[AddressRanking.Key(host: "www.example.com", family: .ipv4)]?.measured["192.0.2.2"] == nil)
        for probe in second { ranking.probeFinished(probe.id, connected: true, now: due) }
        // A TTL of 1 s: the next round waits for the minimum interval (10 s) instead.
        #expect(Self.rank(&ranking, Self.answer(v4: ["192.0.2.1"]), at: due.advanced(bySeconds: 9)).1.isEmpty)
        #expect(Self.rank(&ranking, Self.answer(v4: ["192.0.2.1"]), at: due.advanced(bySeconds: 10)).1.count == 1)
    }

    /// Each family is ranked on its own: an IPv4 answer does not start the IPv6 round.
    @Test func familiesAreRankedSeparately() {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        #expect(Self.rank(&ranking, Self.answer(v4: ["192.0.2.1"]), at: Self.start).1.count == 1)
        let (_, probes) = Self.rank(
            &ranking, Self.answer(v4: ["192.0.2.1"], v6: ["2001:db8::1"]), at: Self.start.advanced(bySeconds: 1))
        #expect(probes.map(\.address.description) == ["2001:db8::1"])
    }

    /// A uid's resolves run at most `maxProbesPerUser` probes at once and everyone's at most
    /// `maxProbes`: a round over a cap does not start (nothing is probed, nothing is lost: the
    /// next resolve of the name starts it), and another uid is not held back by the first's.
    @Test func probesAreChargedToTheUidWhoseResolveStartedThem() throws {
        let limits = RankingLimits(maxProbesPerUser: 3, maxProbes: 5, maxAddressesPerRound: 2)
        let hosts = (1...5).map { "h\($0).example.com" }
        var ranking = AddressRanking(ports: hosts.map { RankPort(host: $0, port: 80) }, limits: limits)
        let pair = ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
        let (_, first) = Self.rank(&ranking, Self.answer(hosts[0], v4: pair), uid: 1000, at: Self.start)
        #expect(first.count == 2, "at most two addresses per round")
        #expect(Self.rank(&ranking, Self.answer(hosts[1], v4: pair), uid: 1000, at: Self.start).1.isEmpty)
        #expect(ranking.runningProbes(of: 1000) == 2, "a round over the uid's cap does not start")
        let (_, other) = Self.rank(&ranking, Self.answer(hosts[1], v4: pair), uid: 1001, at: Self.start)
        #expect(other.count == 2)
        #expect(Self.rank(&ranking, Self.answer(hosts[2], v4: pair), uid: 1002, at: Self.start).1.isEmpty)
        #expect(ranking.runningProbes == 4, "a round over the total cap does not start")
        // A probe back frees its uid's slot and the total's; the round that was refused starts.
        ranking.probeFinished(first[0].id, connected: true, now: Self.start)
        ranking.probeFinished(first[1].id, connected: false, now: Self.start)
        #expect(ranking.runningProbes(of: 1000) == 0)
        #expect(Self.rank(&ranking, Self.answer(hosts[2], v4: pair), uid: 1000, at: Self.start).1.count == 2)
        ranking.probeFinished(first[0].id, connected: true, now: Self.start)
        #expect(ranking.runningProbes == 4, "a probe reported twice is counted once")
    }

    /// Addresses a connection means nothing to (the unspecified address reaches this machine,
    /// multicast, link-local without an interface) are never probed and rank as unreachable.
    @Test func addressesThatNameNoPeerAreNotProbed() {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        let (_, probes) = Self.rank(
            &ranking, Self.answer(v4: ["0.0.0.0", "224.0.0.1", "192.0.2.1"], v6: ["::", "ff02::1", "fe80::1", "::1"]),
            at: Self.start)
        #expect(probes.map(\.address.description) == ["192.0.2.1", "::1"])
        let (reply, _) = Self.rank(
            &ranking, Self.answer(v4: ["0.0.0.0", "224.0.0.1", "192.0.2.1"]), at: Self.start.advanced(bySeconds: 1))
        #expect(reply.ipv4 == ["192.0.2.1", "0.0.0.0", "224.0.0.1"])
    }

    /// A reload that takes a host off the list or moves it to another port forgets its
    /// measurements; probes still running finish without measuring, and free their slots.
    /// A network change forgets every measurement (the paths may be gone): the next answer goes
    /// out in the upstream's order and starts a new round at once, and a probe of the old network
    /// that ends afterwards measures nothing but frees its uid's slot.
    @Test func aNetworkChangeForgetsWhatWasMeasuredAndStartsANewRound() throws {
        var ranking = AddressRanking(ports: [RankPort(host: "www.example.com", port: 443)])
        let given = Self.answer(v4: ["192.0.2.1", "192.0.2.2"])
        let (_, first) = Self.rank(&ranking, given, at: Self.start)
        try Self.finish(&ranking, first, "192.0.2.2", afterMs: 5)
        let stale = try #require(first.first { $0.address.description == "192.0.2.1" })
        #expect(Self.rank(&ranking, given, at: Self.start.advanced(bySeconds: 1)).0.ipv4 == ["192.0.2.2", "192.0.2.1"])
        ranking.networkChanged()
        let (reply, second) = Self.rank(&ranking, given, at: Self.start.advanced(bySeconds: 2))
        #expect(reply == given, "nothing measured on this network yet")
        #expect(second.count == 2, "a new round at once, not after the TTL")
        // The probe of the old network ends: its slot is free, its measurement is not kept.
        ranking.probeFinished(stale.id, connected: true, now: Self.start.advanced(bySeconds: 3))
        #expect(ranking.runningProbes(of: 1000) == 2)
        let roundStart = Self.start.advanced(bySeconds: 2)
        for (address, milliseconds) in [("192.0.2.1", 9), ("192.0.2.2", 20)] {
            let probe = try #require(second.first { $0.address.description == address })
            ranking.probeFinished(probe.id, connected: true, now: roundStart.advanced(byMilliseconds: milliseconds))
        }
        #expect(Self.rank(&ranking, given, at: Self.start.advanced(bySeconds: 4)).0.ipv4 == ["192.0.2.1", "192.0.2.2"])
        #expect(ranking.runningProbes == 0)
    }

    @Test func aReloadForgetsWhatAnotherPortMeasured() throws {
        var ranking = AddressRanking(ports: [
            RankPort(host: "www.example.com", port: 443), RankPort(host: "api.example.com", port: 443),
        ])
        let (_, probes) = Self.rank(&ranking, Self.answer(v4: ["192.0.2.1", "192.0.2.2"]), at: Self.start)
        try Self.finish(&ranking, probes, "192.0.2.2", afterMs: 1)
        ranking.apply(ports: [RankPort(host: "www.example.com", port: 8443)])
        try Self.finish(&ranking, probes, "192.0.2.1", afterMs: 1)
        #expect(ranking.runningProbes == 0)
        let (reply, again) = Self.rank(
            &ranking, Self.answer(v4: ["192.0.2.1", "192.0.2.2"]), at: Self.start.advanced(bySeconds: 1))
        #expect(reply.ipv4 == ["192.0.2.1", "192.0.2.2"], "measured on 443: forgotten")
        #expect(again.map(\.port) == [8443, 8443])
        #expect(Self.rank(&ranking, Self.answer("api.example.com", v4: ["192.0.2.1"]), at: Self.start).1.isEmpty)
    }
}
