import HTTPDNSProtocol

/// What a reply says of one family: its addresses (none: no address), for how long, and whether
/// the name does not exist at all.
struct FamilyAnswer {
    var addresses: [String]
    var ttl: Int
    var noSuchName: Bool

    /// A cache entry, `ttl` seconds before it expires.
    init(_ entry: DNSCacheEntry, ttl: Int) {
        addresses = entry.negative ? [] : entry.addresses
        self.ttl = ttl
        noSuchName = entry.noSuchName
    }

    init(addresses: [String], ttl: Int, noSuchName: Bool = false) {
        self.addresses = addresses
        self.ttl = ttl
        self.noSuchName = noSuchName
    }
}

/// The families of one reply, each from wherever it came (an upstream, the cache, the fleet).
struct ReplyParts {
    var ipv4: FamilyAnswer?
    var ipv6: FamilyAnswer?

    init() {}

    subscript(family: IPFamily) -> FamilyAnswer? {
        get { family == .ipv4 ? ipv4 : ipv6 }
        set {
            if family == .ipv4 { ipv4 = newValue } else { ipv6 = newValue }
        }
    }

    /// Fresh cache entries, each with the whole seconds it has left (0 when `stale`).
    init(_ entries: [DNSCacheEntry], now: MonotonicInstant, stale: Bool = false) {
        for entry in entries {
            self[entry.family] = FamilyAnswer(
                entry, ttl: stale ? 0 : Int(now.secondsRoundedUp(until: entry.expiresAt)))
        }
    }
}

extension ResolverMachine {
    /// The reply for `requested` from `parts`: the addresses of every family, `ttl` the smallest
    /// TTL of the families that have addresses (how long the addresses handed out are valid: a
    /// name with only A records keeps its A records' TTL, not the negative one of its AAAA) and,
    /// for both families, each one's in `ttls`; -32001 when no family has an address, with
    /// `no-such-name` when the name does not exist, `no-data` when it only has no address of
    /// these families.
    static func reply(
        _ host: String, _ parts: consuming ReplyParts, requested: AddressFamily, stale: Bool,
        source: ResolveResult.Source, upstream: String? = nil
    ) -> Result<ResolveResult, RPCError> {
        // The families one at a time: looping over an array of the two copied each into it.
        var ttl = Int.max
        if let v4 = parts.ipv4, !v4.addresses.isEmpty { ttl = v4.ttl }
        if let v6 = parts.ipv6, !v6.addresses.isEmpty { ttl = min(ttl, v6.ttl) }
        var ttls: ResolveResult.FamilyTTLs?
        if requested == .both, let v4 = parts.ipv4, let v6 = parts.ipv6 {
            ttls = ResolveResult.FamilyTTLs(ipv4: v4.ttl, ipv6: v6.ttl)
        }
        let noSuchName = parts.ipv4?.noSuchName == true || parts.ipv6?.noSuchName == true
        // The address lists moved out of the parts, not copied (a retain and a release each).
        let ipv4 = parts.ipv4.take()?.addresses ?? []
        let ipv6 = parts.ipv6.take()?.addresses ?? []
        guard !(ipv4.isEmpty && ipv6.isEmpty) else {
            return .failure(.hostNotFound(host, reason: noSuchName ? .noSuchName : .noData))
        }
        return .success(
            ResolveResult(
                host: host, ipv4: ipv4, ipv6: ipv6, ttl: ttl, ttls: ttls, stale: stale, source: source,
                upstream: upstream))
    }

    /// A reply from cached entries (fresh, or stale with ttl 0), naming the upstream that
    /// answered them where known.
    static func reply(
        _ host: String, cached entries: [DNSCacheEntry], requested: AddressFamily, now: MonotonicInstant, stale: Bool
    ) -> Result<ResolveResult, RPCError> {
        reply(
            host, ReplyParts(entries, now: now, stale: stale), requested: requested, stale: stale, source: .cache,
            upstream: upstreamOf(entries))
    }

    /// The upstream that answered cached entries: the last positive one's, where known.
    static func upstreamOf(_ entries: [DNSCacheEntry]) -> String? {
        entries.last { !$0.negative && $0.upstream != nil }?.upstream
    }

    /// One caller's reply from its flight's outcome, with the families the cache had fresh for
    /// it (a flight may ask only the family the cache lacked).
    func reply(_ outcome: FlightOutcome, _ key: FlightKey, _ waiter: Waiter, now: MonotonicInstant) -> Result<
        ResolveResult, RPCError
    > {
        var parts = ReplyParts(waiter.cached, now: now)
        let result: Result<ResolveResult, RPCError>
        switch outcome {
        case .answered(let answer, let upstream, let source):
            for family in key.family.families {
                let part = CachePart(answer, family: family)
                parts[family] = FamilyAnswer(
                    addresses: part.addresses, ttl: cache.ttl(of: part, host: key.host), noSuchName: part.noSuchName)
            }
            result = Self.reply(
                key.host, parts, requested: waiter.requested, stale: false, source: source, upstream: upstream)
        case .fleet(let hits):
            // The publisher's expiry keeps counting down: the TTL is never extended here.
            for hit in hits {
                parts[hit.record.family] = FamilyAnswer(
                    addresses: hit.record.negative ? [] : hit.record.addresses,
                    ttl: min(hit.ttlSeconds, settings.limits.bounds(for: key.host).maxTTL),
                    noSuchName: hit.record.noSuchName)
            }
            result = Self.reply(key.host, parts, requested: waiter.requested, stale: false, source: .fleet)
        case .failed(let failure):
            return fallback(key.host, waiter, failure, now: now)
        case .abandoned:
            return fallback(key.host, waiter, .timedOut(milliseconds: waiter.timeoutMs), now: now)
        }
        if case .success(let answered) = result { remember(answered, uid: waiter.uid, now: now) }
        return result
    }

    /// After a failure or timeout: a stale answer when allowed (RFC 8767); else, when only one
    /// family was asked because the cache held the other fresh, that family as a cached answer
    /// (the asked one with no address); else -32002 with the failure as its reason.
    func fallback(_ host: String, _ waiter: Waiter, _ failure: ResolutionFailure, now: MonotonicInstant)
        -> Result<ResolveResult, RPCError>
    {
        let fresh = waiter.cached.filter { $0.expiresAt > now }
        if !fresh.isEmpty,
            case .success(let result) = Self.reply(
                host, cached: fresh, requested: waiter.requested, now: now, stale: false)
        {
            remember(result, uid: waiter.uid, now: now)
            return .success(result)
        }
        if waiter.allowStale,
            case .stale(let entries) = cache.answer(
                host: host, families: waiter.requested.families, now: now, allowStale: true, counted: false),
            case .success(let result) = Self.reply(
                host, cached: entries, requested: waiter.requested, now: now, stale: true)
        {
            cache.noteStaleServed()
            remember(result, uid: waiter.uid, now: now)
            return .success(result)
        }
        return .failure(.resolutionUnavailable(host, reason: failure.description))
    }

    /// Cookie normalization and `reverse` for `uid` learn the addresses this uid was handed out,
    /// from upstream, cache or `Static=` alike, each family for its own TTL.
    func remember(_ result: ResolveResult, uid: UInt32, now: MonotonicInstant) {
        owners.record(
            uid: uid, host: result.host, addresses: result.ipv4, ttl: result.ttls?.ipv4 ?? result.ttl, now: now)
        owners.record(
            uid: uid, host: result.host, addresses: result.ipv6, ttl: result.ttls?.ipv6 ?? result.ttl, now: now)
    }

    /// The same from a reply's parts, before the reply is made: a family without addresses
    /// records nothing, so it matters not whether the reply is a success.
    func remember(_ host: String, _ parts: borrowing ReplyParts, uid: UInt32, now: MonotonicInstant) {
        if let v4 = parts.ipv4 { owners.record(uid: uid, host: host, addresses: v4.addresses, ttl: v4.ttl, now: now) }
        if let v6 = parts.ipv6 { owners.record(uid: uid, host: host, addresses: v6.addresses, ttl: v6.ttl, now: now) }
    }
}
