import HTTPDNSProtocol

/// The bounds of ranking probes (httpdnsd.conf(5), `RankPorts=`), fixed by the daemon.
public struct RankingLimits: Sendable, Equatable {
    /// One probe's whole deadline: a connection not open by then counts as unreachable. 2 s, the
    /// order of the SDKs' own (Alibaba's C SDK connects within 2.5 s, its Android SDK's probe
    /// within 5 s): a path slower than that is not the one to try first.
    public var probeTimeoutMs: Int
    /// Probes running at once that one uid's resolves started; a round that would go past it
    /// waits for a later resolve.
    public var maxProbesPerUser: Int
    /// Probes running at once, for every uid together.
    public var maxProbes: Int
    /// Addresses probed per name and family in one round (the first ones of the answer; the rest
    /// keep the answer's order after the measured ones). Tencent's SDK ranks at most 10 items.
    public var maxAddressesPerRound: Int
    /// The shortest time between two rounds of one name and family, whatever its TTL: an answer
    /// with a TTL of 0 or 1 s must not have its addresses probed at every resolve.
    public var minimumIntervalSeconds: Int

    public init(
        probeTimeoutMs: Int = 2_000, maxProbesPerUser: Int = 16, maxProbes: Int = 64, maxAddressesPerRound: Int = 8,
        minimumIntervalSeconds: Int = 10
    ) {
        self.probeTimeoutMs = probeTimeoutMs
        self.maxProbesPerUser = maxProbesPerUser
        self.maxProbes = maxProbes
        self.maxAddressesPerRound = maxAddressesPerRound
        self.minimumIntervalSeconds = minimumIntervalSeconds
    }
}

/// One TCP connect probe for the driver to carry out: open a connection to `address`:`port`
/// without blocking, within `timeoutMs`, close it, and report with `AddressRanking.probeFinished`.
public struct ConnectProbeRequest: Sendable, Equatable {
    public var id: UInt64
    public var address: IPAddress
    public var port: UInt16
    public var timeoutMs: Int

    public init(id: UInt64, address: IPAddress, port: UInt16, timeoutMs: Int) {
        self.id = id
        self.address = address
        self.port = port
        self.timeoutMs = timeoutMs
    }
}

/// `RankPorts=`: orders the addresses of the configured host names by how fast a TCP connection
/// to the host's port opens from this machine, as the vendors' SDKs do (Alibaba's
/// `setIPRankingList`, Tencent's `WGSetIPRankData`), so callers connect to the fastest first.
///
/// A pure state machine: the driver hands it every successful resolve reply with the uid that
/// asked and `now`; it reorders the reply from what earlier probes measured (never waiting for
/// one: the first answer of a name goes out in the upstream's order) and returns the probes to
/// start, which the driver reports back. Per name and family a round of probes starts at most
/// once per TTL of the answer that started it (at least `minimumIntervalSeconds`), and only
/// addresses of that answer are probed. Probes are charged to the uid whose resolve started
/// their round, with caps per uid and in total on probes running; a round over a cap does not
/// start (a later resolve starts it).
///
/// Order: addresses with a measured connect time first, fastest first (in whole milliseconds),
/// then addresses not measured, then unreachable ones; equal ranks keep the answer's order.
public struct AddressRanking {
    /// What a probe found of one address.
    enum Measurement: Equatable {
        case connected(milliseconds: Int64)
        case unreachable

        /// Sort key: connected by time, then unmeasured (nil), then unreachable.
        static func rank(_ measurement: Measurement?) -> (Int, Int64) {
            switch measurement {
            case .connected(let milliseconds)?: (0, milliseconds)
            case nil: (1, 0)
            case .unreachable?: (2, 0)
            }
        }
    }

    /// A name and family ranked on their own (an IPv4-only resolve ranks only IPv4 addresses).
    struct Key: Hashable {
        var host: String
        var family: IPFamily
    }

    /// What is known of one name and family.
    struct Ranking {
        var port: UInt16
        var measured: [String: Measurement] = [:]
        /// No round starts before this.
        var nextRoundAt: MonotonicInstant
        /// Probes of the current round still running.
        var running = 0
    }

    /// A probe started and not yet reported.
    struct RunningProbe {
        var key: Key
        var address: String
        /// The network it measures (`networkGeneration` when it started).
        var generation: UInt64
        var port: UInt16
        var uid: UInt32
        var startedAt: MonotonicInstant
    }

    /// `RankPorts=`: each ranked host's port.
    public private(set) var ports: [String: UInt16]
    public let limits: RankingLimits
    var rankings: [Key: Ranking] = [:]
    var probes: [UInt64: RunningProbe] = [:]
    /// Probes running per uid (absent: none).
    var runningByUser: [UInt32: Int] = [:]
    private var lastID: UInt64 = 0
    /// Moves on at each network change: a probe of an earlier network measures nothing.
    private var networkGeneration: UInt64 = 0

    /// Ranking for the hosts of `ports`.
    public init(ports: [RankPort], limits: RankingLimits = RankingLimits()) {
        self.ports = Self.table(ports)
        self.limits = limits
    }

    /// Whether any host is ranked (`rank` changes nothing otherwise).
    public var isConfigured: Bool { !ports.isEmpty }

    /// Probes running, for every uid together.
    public var runningProbes: Int { probes.count }

    /// Probes running that `uid`'s resolves started.
    public func runningProbes(of uid: UInt32) -> Int { runningByUser[uid] ?? 0 }

    /// Orders the addresses of `uid`'s successful reply by what was measured, and returns the
    /// probes to start for the families whose round is due. Literal and `Static=` answers are left
    /// as they are: nothing asked an upstream for them.
    public mutating func rank(_ result: inout ResolveResult, uid: UInt32, now: MonotonicInstant)
        -> [ConnectProbeRequest]
    {
        guard !ports.isEmpty, let port = ports[result.host], result.source != .literal, result.source != .static
        else { return [] }
        var requests: [ConnectProbeRequest] = []
        if !result.ipv4.isEmpty {
            let ttl = result.ttls?.ipv4 ?? result.ttl
            rank(
                &result.ipv4, Key(host: result.host, family: .ipv4), port: port, ttl: ttl, uid: uid, now: now,
                into: &requests)
        }
        if !result.ipv6.isEmpty {
            let ttl = result.ttls?.ipv6 ?? result.ttl
            rank(
                &result.ipv6, Key(host: result.host, family: .ipv6), port: port, ttl: ttl, uid: uid, now: now,
                into: &requests)
        }
        return requests
    }

    private mutating func rank(
        _ addresses: inout [String], _ key: Key, port: UInt16, ttl: Int, uid: UInt32, now: MonotonicInstant,
        into requests: inout [ConnectProbeRequest]
    ) {
        if let ranking = rankings[key], !ranking.measured.isEmpty {
            addresses = Self.order(addresses, by: ranking.measured)
        }
        if let ranking = rankings[key], ranking.running > 0 || now < ranking.nextRoundAt { return }
        var probed: [(text: String, address: IPAddress)] = []
        var unprobeable: [String] = []
        for text in addresses.prefix(limits.maxAddressesPerRound) {
            if let address = IPAddress(text), Self.isProbeable(address) {
                probed.append((text, address))
            } else {
                unprobeable.append(text)
            }
        }
        let running = runningByUser[uid] ?? 0
        guard running + probed.count <= limits.maxProbesPerUser, probes.count + probed.count <= limits.maxProbes
        else { return }
        let wanted = Set(addresses)
        var ranking = rankings[key] ?? Ranking(port: port, nextRoundAt: now)
        // Only what this answer holds is kept: a measurement of an address the name no longer
        // has would order nothing.
        ranking.measured = ranking.measured.filter { wanted.contains($0.key) }
        for text in unprobeable { ranking.measured[text] = .unreachable }
        ranking.nextRoundAt = now.advanced(bySeconds: max(ttl, limits.minimumIntervalSeconds))
        ranking.running = probed.count
        rankings[key] = ranking
        if !probed.isEmpty { runningByUser[uid] = running + probed.count }
        for (text, address) in probed {
            lastID += 1
            probes[lastID] = RunningProbe(
                key: key, address: text, generation: networkGeneration, port: port, uid: uid, startedAt: now)
            requests.append(
                ConnectProbeRequest(id: lastID, address: address, port: port, timeoutMs: limits.probeTimeoutMs))
        }
    }

    /// A probe ended: the connection opened (`connected`) at `now`, or it failed or ran out of
    /// time. Its uid's slot is free again; a probe of a host a reload took off the list, or put
    /// on another port, measures nothing.
    public mutating func probeFinished(_ id: UInt64, connected: Bool, now: MonotonicInstant) {
        guard let probe = probes.removeValue(forKey: id) else { return }
        let left = (runningByUser[probe.uid] ?? 1) - 1
        runningByUser[probe.uid] = left > 0 ? left : nil
        guard probe.generation == networkGeneration, var ranking = rankings[probe.key], ranking.port == probe.port
        else { return }
        ranking.running = max(0, ranking.running - 1)
        ranking.measured[probe.address] =
            connected ? .connected(milliseconds: now.nanoseconds(since: probe.startedAt) / 1_000_000) : .unreachable
        rankings[probe.key] = ranking
    }

    /// The machine's addresses or routes changed (`OnNetworkChange=refresh` or `flush`): what was
    /// measured went over paths that may be gone, so every host forgets it, its next answer starts
    /// a new round, and probes still running measure nothing (their uids' slots free as they end).
    public mutating func networkChanged() {
        networkGeneration &+= 1
        rankings.removeAll()
    }

    /// A reloaded `RankPorts=`: a host no longer listed, or listed with another port, forgets
    /// what was measured (its next answer starts a new round); probes running finish and count
    /// against their uid until they do.
    public mutating func apply(ports: [RankPort]) {
        self.ports = Self.table(ports)
        rankings = rankings.filter { self.ports[$0.key.host] == $0.value.port }
    }

    /// `addresses` ordered by rank (`Measurement.rank`), equal ranks in their given order.
    static func order(_ addresses: [String], by measured: [String: Measurement]) -> [String] {
        addresses.enumerated()
            .map { (rank: Measurement.rank(measured[$0.element]), offset: $0.offset, address: $0.element) }
            .sorted { $0.rank != $1.rank ? $0.rank < $1.rank : $0.offset < $1.offset }
            .map(\.address)
    }

    /// Whether a connection to `address` means anything: not the unspecified address (which
    /// reaches this machine), not multicast or broadcast, not IPv6 link-local (it needs an
    /// interface the answer does not name). Others count as unreachable without a probe.
    static func isProbeable(_ address: IPAddress) -> Bool {
        let bytes = address.bytes
        switch address.family {
        case .ipv4:
            return bytes[0] != 0 && bytes[0] < 224
        case .ipv6:
            if bytes.allSatisfy({ $0 == 0 }) { return false }
            if bytes[0] == 0xFF { return false }
            return !(bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
        }
    }

    private static func table(_ ports: [RankPort]) -> [String: UInt16] {
        var table: [String: UInt16] = [:]
        for rank in ports where table[rank.host] == nil { table[rank.host] = rank.port }
        return table
    }
}

@available(*, unavailable, message: "the ranking belongs to one thread (the I/O loop)")
extension AddressRanking: Sendable {}
