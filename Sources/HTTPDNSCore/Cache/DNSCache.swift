import HTTPDNSCollections
import HTTPDNSProtocol

/// The shared DNS answer cache: per (host, family), TTL-clamped, with negative entries, a
/// serve-stale window, a hard cap evicting the earliest expiry, and hit/miss counters.
///
/// The cache is shared by every user, each with a fair share of it: every entry remembers who
/// used it while fresh (`CacheUse`), and making room for one uid's answer evicts only entries
/// that uid alone used, entries nobody used (prefetched, restored, past their TTL), never one
/// another uid used within its TTL; when none is found the answer is not cached (its callers
/// still get it).
///
/// The shape follows systemd-resolved's `DnsCache` (a hash map plus an expiry priority queue plus
/// counters). Time is passed in: `now` is the monotonic clock; wall-clock time appears only at the
/// persistence seam. One thread owns an instance (the daemon's I/O loop), so it is not Sendable.
public final class DNSCache {
    /// The policy; a reload may change it: answers inserted from then on meet the new TTL bounds
    /// and capacity (a lower capacity makes room at the next insert), entries already cached
    /// keep their expiry.
    public var limits: DNSCacheLimits

    /// Requests found fresh in every family they asked for (positive or negative), by `answer`
    /// or `freshReplyParts`.
    public private(set) var hits = 0
    /// Requests `answer` did not find fresh, including those answered with a stale entry.
    public private(set) var misses = 0
    /// Stale answers the caller reported as actually served (`noteStaleServed()`).
    public private(set) var staleServed = 0
    /// Entries marked for refresh (`markAllForRefresh`) and not replaced yet: while 0, a hit
    /// looks for no mark.
    public private(set) var refreshMarks = 0

    private struct Key: Hashable {
        var host: String
        var family: IPFamily
    }

    /// An entry without its host and family, which its place in `entries` gives. The flags and
    /// the user fit in the padding after the serial: 48 bytes, as without them.
    private struct Stored {
        var addresses: [String]
        var upstream: String?
        var expiresAt: MonotonicInstant
        /// Matches the heap item pushed for this version of the entry; older items are dead.
        var serial: UInt64
        var negative: Bool
        /// A negative entry for a name that does not exist at all (NXDOMAIN), not only in this
        /// family (NODATA).
        var noSuchName: Bool
        /// 0: nobody used the entry; 1: only `user`; 2: several uids.
        var users: UInt8
        /// The network changed since the answer came (`markAllForRefresh`): its next use asks again.
        var needsRefresh = false
        var user: UInt32

        init(_ entry: DNSCacheEntry, serial: UInt64, use: CacheUse) {
            addresses = entry.addresses
            upstream = entry.upstream
            expiresAt = entry.expiresAt
            self.serial = serial
            negative = entry.negative
            noSuchName = entry.noSuchName
            switch use {
            case .nobody: (users, user) = (0, 0)
            case .one(let uid): (users, user) = (1, uid)
            case .several: (users, user) = (2, 0)
            }
        }

        func entry(_ key: Key) -> DNSCacheEntry {
            DNSCacheEntry(
                host: key.host, family: key.family, addresses: addresses, upstream: upstream, expiresAt: expiresAt,
                negative: negative, noSuchName: noSuchName)
        }

        /// Whether the entry is known to `uid` already (nothing to note).
        func isUsed(by uid: UInt32) -> Bool { users == 2 || (users == 1 && user == uid) }

        mutating func noteUse(by uid: UInt32) {
            if users == 0 {
                (users, user) = (1, uid)
            } else if users == 1, user != uid {
                users = 2
            }
        }

        /// Whether making room for `uid`'s answer (nil: the daemon's) may evict this entry: only
        /// if no other uid used it within its TTL.
        func isEvictable(for uid: UInt32?, now: MonotonicInstant) -> Bool {
            if expiresAt <= now || users == 0 { return true }
            guard let uid else { return false }
            return users == 1 && user == uid
        }
    }

    /// A host's entries, both families in one slot: a `both` lookup hashes the name once, and the
    /// table has a slot per name rather than per entry (20,000 entries of 10,000 names: 2.4 MiB as
    /// one slot per entry with the host and family kept once, 1.8 MiB this way).
    private struct Families {
        var ipv4: Stored?
        var ipv6: Stored?

        subscript(family: IPFamily) -> Stored? {
            get { family == .ipv4 ? ipv4 : ipv6 }
            set {
                if family == .ipv4 { ipv4 = newValue } else { ipv6 = newValue }
            }
        }

        var isEmpty: Bool { ipv4 == nil && ipv6 == nil }
    }

    /// An entry's place in an expiry heap: earliest expiry first, then the earliest stored.
    private struct ExpiryItem: Comparable {
        var expiresAt: MonotonicInstant
        var key: Key
        /// The insertion serial of the entry this item was pushed for.
        var serial: UInt64

        static func < (lhs: ExpiryItem, rhs: ExpiryItem) -> Bool {
            lhs.expiresAt != rhs.expiresAt ? lhs.expiresAt < rhs.expiresAt : lhs.serial < rhs.serial
        }

        static func == (lhs: ExpiryItem, rhs: ExpiryItem) -> Bool { lhs.serial == rhs.serial }
    }

    private var entries: [String: Families] = [:]
    /// Entries held (both families counted), which `entries.count` (names) is not.
    private var storedCount = 0
    /// Positive and negative entries live in separate heaps because they die at different
    /// times (positive ones at expiry + maxStale, negative ones at expiry). Removal is lazy: when
    /// an entry is replaced or flushed its item stays behind, dead because its `serial` no longer
    /// matches the entry's, and `compactIfMostlyDead` drops the dead ones once they outnumber the
    /// live, so the heaps stay O(entries).
    private var positiveExpiries = BinaryHeap<ExpiryItem>()
    private var negativeExpiries = BinaryHeap<ExpiryItem>()
    private var nextSerial: UInt64 = 0

    public init(limits: DNSCacheLimits = DNSCacheLimits()) {
        self.limits = limits
    }

    /// Number of entries held, fresh or not.
    public var entryCount: Int { storedCount }

    /// Caches one upstream answer for `host`: per part, the addresses of its family (canonical
    /// strings, already validated); an empty list is "no address of this family", a negative
    /// entry. Positive parts live their own TTL and negative ones `negativeTTL`, each clamped to
    /// [minTTL, maxTTL] (`ttl(of:)`). `use` says who asked for it.
    ///
    /// The parts are stored together: making room at the cap evicts other names' entries, never
    /// a part of this answer (nor an older version of one, which this answer supersedes anyway).
    /// A part whose TTL is 0 after clamping is "use once, do not cache" (RFC 1035 section
    /// 3.2.1); it also removes the older entry it supersedes.
    ///
    /// - Returns: how many parts are now cached.
    @discardableResult
    public func insert(
        host: String, parts: [CachePart], upstream: String?, now: MonotonicInstant, use: CacheUse = .nobody
    ) -> Int {
        var cacheable: [DNSCacheEntry] = []
        for part in parts {
            let negative = part.addresses.isEmpty
            let clamped = ttl(of: part, host: host)
            remove(Key(host: host, family: part.family))
            guard clamped > 0 else { continue }
            cacheable.append(
                DNSCacheEntry(
                    host: host, family: part.family, addresses: part.addresses, upstream: upstream,
                    expiresAt: now + clamped, negative: negative, noSuchName: negative && part.noSuchName))
        }
        return storeTogether(cacheable, now: now, use: use)
    }

    /// The seconds a part of `host`'s answer is cached for (and answered with): its TTL, or
    /// `negativeTTL` for "no address", clamped to the host's bounds (its domain's `DomainTTL=`,
    /// else [minTTL, maxTTL]).
    public func ttl(of part: CachePart, host: String) -> Int {
        limits.bounds(for: host).clamp(ttl: part.addresses.isEmpty ? limits.negativeTTL : part.ttl)
    }

    /// Caches answers whose expiry was decided elsewhere (another machine's, through the fleet):
    /// each lives until its own `expiresAt`, so `MinTTL=` never lengthens it, and never longer
    /// than its host's ceiling (`maxTTL`, or its domain's) from now. Entries already expired are left out. Stored together, as
    /// `insert(host:parts:ttl:upstream:now:)` stores one answer's parts.
    ///
    /// - Returns: how many entries are now cached.
    @discardableResult
    public func insertShared(_ shared: [DNSCacheEntry], now: MonotonicInstant, use: CacheUse = .nobody) -> Int {
        var cacheable: [DNSCacheEntry] = []
        for var entry in shared where now < entry.expiresAt {
            let ceiling = now + limits.bounds(for: entry.host).maxTTL
            if ceiling < entry.expiresAt { entry.expiresAt = ceiling }
            cacheable.append(entry)
        }
        return storeTogether(cacheable, now: now, use: use)
    }

    /// What one family of a host's slot holds at `now`, without counting. With `allowStale`, an
    /// expired positive entry within `maxStale` comes back as `.stale`.
    private func lookup(_ key: Key, in families: Families?, now: MonotonicInstant, allowStale: Bool) -> FamilyLookup {
        guard let stored = families?[key.family] else { return .miss }
        let entry = stored.entry(key)
        if now < entry.expiresAt {
            return .fresh(entry, ttlLeft: Int(now.secondsRoundedUp(until: entry.expiresAt)))
        }
        guard isServableStale(expiresAt: entry.expiresAt, negative: entry.negative, now: now) else {
            remove(key)  // dead: expired and outside any stale window
            return .miss
        }
        return allowStale ? .stale(entry) : .miss
    }

    /// The cached answer to one request for `families` of `host`, counted once unless `counted`
    /// is false (a second look for the same request): a hit when every family is fresh, else a
    /// miss. The caller calls `noteStaleServed()` if it answers with a stale one. Entries
    /// answered to `user` count as used by that uid (see `CacheUse`).
    public func answer(
        host: String, families: [IPFamily], now: MonotonicInstant, allowStale: Bool, counted: Bool = true,
        user: UInt32? = nil
    ) -> CachedAnswer {
        var found: [DNSCacheEntry] = []
        // One allocation; growing from empty reallocated for the second family of every answer.
        found.reserveCapacity(families.count)
        var ttlLeft = Int.max
        var anyStale = false
        var missing: IPFamily?
        let index = entries.index(forKey: host)
        let slot = index.map { entries.values[$0] }
        for family in families {
            switch lookup(Key(host: host, family: family), in: slot, now: now, allowStale: allowStale) {
            case .miss:
                guard missing == nil, families.count == 2 else {
                    if counted { misses += 1 }
                    return .miss
                }
                missing = family
            case .fresh(let entry, let left):
                found.append(entry)
                ttlLeft = min(ttlLeft, left)
                if let user, let index, slot?[family]?.isUsed(by: user) == false {
                    entries.values[index][family]?.noteUse(by: user)
                }
            case .stale(let entry):
                found.append(entry)
                anyStale = true
            }
        }
        if let missing {
            if counted { misses += 1 }
            return anyStale ? .miss : .partial(found, missing: missing)
        }
        if anyStale {
            if counted { misses += 1 }
            return .stale(found)
        }
        if counted { hits += 1 }
        return .fresh(found, ttlLeft: ttlLeft)
    }

    /// The reply parts of a request every family of which is cached and fresh, read where they
    /// are stored (copying each entry out, as `answer` does, and into the reply again was a tenth
    /// of a cache hit), with the upstream that answered, and counted as `answer` counts a hit.
    /// Nil, with nothing counted or changed, otherwise: `answer` then says what there is.
    func freshReplyParts(host: String, families: AddressFamily, now: MonotonicInstant, user: UInt32)
        -> (host: String, parts: ReplyParts, upstream: String?)?
    {
        guard let index = entries.index(forKey: host) else { return nil }
        var parts = ReplyParts()
        var upstream: String?
        for family in families.families {
            let part = Self.freshPart(
                family == .ipv4 ? entries.values[index].ipv4 : entries.values[index].ipv6, now: now)
            guard let part else { return nil }
            if let answeredBy = part.upstream { upstream = answeredBy }
            parts[family] = part.answer
        }
        hits += 1
        for family in families.families {
            if family == .ipv4 {
                if entries.values[index].ipv4?.isUsed(by: user) == false {
                    entries.values[index].ipv4?.noteUse(by: user)
                }
            } else if entries.values[index].ipv6?.isUsed(by: user) == false {
                entries.values[index].ipv6?.noteUse(by: user)
            }
        }
        // The stored name: the same string the address memory holds for it, which compares equal
        // without reading its bytes.
        return (entries.keys[index], parts, upstream)
    }

    private static func freshPart(_ stored: Stored?, now: MonotonicInstant)
        -> (answer: FamilyAnswer, upstream: String?)?
    {
        guard let stored, now < stored.expiresAt else { return nil }
        return (
            FamilyAnswer(
                addresses: stored.negative ? [] : stored.addresses,
                ttl: Int(now.secondsRoundedUp(until: stored.expiresAt)),
                noSuchName: stored.noSuchName),
            stored.negative ? nil : stored.upstream
        )
    }

    /// The entry for a key, fresh or not, without touching the counters (for prefetch timing
    /// and `status`).
    public func peek(host: String, family: IPFamily) -> DNSCacheEntry? {
        entries[host]?[family]?.entry(Key(host: host, family: family))
    }

    /// Counts one stale answer actually returned to a client.
    public func noteStaleServed() {
        staleServed += 1
    }

    /// Removes every entry that can no longer be served: positive ones past expiry + maxStale,
    /// negative ones past expiry. Cost is proportional to what is removed.
    ///
    /// - Returns: the number of entries removed.
    @discardableResult
    public func prune(now: MonotonicInstant) -> Int {
        let maxStale = limits.maxStale
        let positives = drain(&positiveExpiries) { $0.expiresAt.advanced(bySeconds: maxStale) <= now }
        let negatives = drain(&negativeExpiries) { $0.expiresAt <= now }
        return positives + negatives
    }

    /// Removes both families of `host`, or everything when `host` is nil.
    ///
    /// - Returns: the number of entries removed.
    @discardableResult
    public func flush(host: String?) -> Int {
        guard let host else {
            let removed = storedCount
            entries.removeAll()
            storedCount = 0
            refreshMarks = 0
            positiveExpiries.removeAll()
            negativeExpiries.removeAll()
            return removed
        }
        var removed = 0
        for family in IPFamily.allCases where remove(Key(host: host, family: family)) { removed += 1 }
        compactIfMostlyDead()
        return removed
    }

    /// Marks every entry for refresh (the network changed): each is still answered, and its next
    /// use asks again (`needsRefresh`); the answer that replaces it carries no mark.
    ///
    /// - Returns: the number of entries marked.
    @discardableResult
    public func markAllForRefresh() -> Int {
        for slot in entries.indices {
            for family in IPFamily.allCases where entries.values[slot][family]?.needsRefresh == false {
                entries.values[slot][family]?.needsRefresh = true
                refreshMarks += 1
            }
        }
        return refreshMarks
    }

    /// Marks both families of `host` for refresh (an answer asked for before the network changed).
    public func markForRefresh(host: String) {
        guard let slot = entries.index(forKey: host) else { return }
        for family in IPFamily.allCases where entries.values[slot][family]?.needsRefresh == false {
            entries.values[slot][family]?.needsRefresh = true
            refreshMarks += 1
        }
    }

    /// Whether any of `families` of `host` is marked for refresh.
    public func needsRefresh(host: String, families: [IPFamily]) -> Bool {
        guard refreshMarks > 0, let slot = entries[host] else { return false }
        return families.contains { slot[$0]?.needsRefresh == true }
    }

    /// Every entry that can still be served (fresh, or stale within `maxStale`), of the hosts
    /// `include` accepts, by host then family.
    public func entries(now: MonotonicInstant, include: (String) -> Bool = { _ in true }) -> [DNSCacheEntry] {
        entries.keys.filter(include).sorted().flatMap { host in
            IPFamily.allCases.compactMap { family in entries[host]?[family]?.entry(Key(host: host, family: family)) }
                .filter { isFreshOrServableStale(expiresAt: $0.expiresAt, negative: $0.negative, now: now) }
        }
    }

    /// Every entry still worth keeping, with its expiry converted to Unix seconds (rounded up),
    /// earliest expiry first.
    ///
    /// Taken on the loop thread once a minute: one pass into one array and one sort, because a chain of
    /// whole-entry transformations over a full cache holds the loop for milliseconds.
    public func snapshot(now: MonotonicInstant, wallNow: Int64) -> [PersistedDNSEntry] {
        var kept: [(expiresAt: MonotonicInstant, entry: PersistedDNSEntry)] = []
        kept.reserveCapacity(storedCount)
        for (host, families) in entries {
            for family in IPFamily.allCases {
                guard let stored = families[family],
                    isFreshOrServableStale(expiresAt: stored.expiresAt, negative: stored.negative, now: now)
                else { continue }
                kept.append(
                    (
                        stored.expiresAt,
                        PersistedDNSEntry(
                            host: host, family: family, addresses: stored.addresses, upstream: stored.upstream,
                            expiresAtUnix: wallNow.addingSaturating(
                                Self.secondsCeiling(stored.expiresAt.nanoseconds(since: now))),
                            negative: stored.negative, noSuchName: stored.noSuchName)
                    ))
            }
        }
        kept.sort { $0.expiresAt < $1.expiresAt }
        return kept.map(\.entry)
    }

    /// Loads persisted entries after a restart. Each expiry is converted back to the monotonic
    /// clock through `wallNow`; the remaining TTL is clamped to today's limits (the wall clock or
    /// the configuration may have changed). Entries that can no longer be served are dropped, as
    /// are those with an address `isValidAddress` rejects (the store is not trusted more than an
    /// upstream). An entry already cached wins whatever its expiry: it was stored since the start
    /// (a prefetch, a resolve), newer knowledge than the snapshot. Counters are not touched.
    ///
    /// - Returns: the number of entries restored.
    @discardableResult
    public func restore(
        _ persisted: [PersistedDNSEntry],
        now: MonotonicInstant,
        wallNow: Int64,
        isValidAddress: (String, IPFamily) -> Bool = { _, _ in true }
    ) -> Int {
        var restored = 0
        for item in persisted {
            let remaining = item.expiresAtUnix.subtractingSaturating(wallNow)
            let bounds = limits.bounds(for: item.host)
            let ceiling = item.negative ? bounds.clamp(ttl: limits.negativeTTL) : bounds.maxTTL
            let ttl = Int(min(remaining, Int64(ceiling)))
            let entry = DNSCacheEntry(
                host: item.host, family: item.family, addresses: item.addresses, upstream: item.upstream,
                expiresAt: now + ttl, negative: item.negative, noSuchName: item.negative && item.noSuchName)
            guard item.negative == item.addresses.isEmpty,
                item.addresses.allSatisfy({ isValidAddress($0, item.family) }),
                isFreshOrServableStale(expiresAt: entry.expiresAt, negative: entry.negative, now: now)
            else { continue }
            if entries[item.host]?[item.family] != nil { continue }
            restored += storeTogether([entry], now: now, use: .nobody)
        }
        return restored
    }

    // MARK: - Internals

    /// Expired, but positive and within `maxStale` of its expiry (RFC 8767).
    private func isServableStale(expiresAt: MonotonicInstant, negative: Bool, now: MonotonicInstant) -> Bool {
        !negative && now < expiresAt.advanced(bySeconds: limits.maxStale)
    }

    /// Worth keeping: fresh, or servable stale.
    private func isFreshOrServableStale(expiresAt: MonotonicInstant, negative: Bool, now: MonotonicInstant) -> Bool {
        now < expiresAt || isServableStale(expiresAt: expiresAt, negative: negative, now: now)
    }

    /// Puts `parts` (one answer) in place of any older entries, first making room for all of
    /// them at once, so no part can be evicted for another. At a cap below the number of parts,
    /// the first ones are kept; when no room can be made for them fairly, none is.
    ///
    /// - Returns: how many parts are now cached.
    private func storeTogether(_ parts: [DNSCacheEntry], now: MonotonicInstant, use: CacheUse) -> Int {
        let kept = parts.prefix(limits.capacity)
        for entry in kept { remove(Key(host: entry.host, family: entry.family)) }
        if storedCount + kept.count > limits.capacity {
            guard makeSpace(for: kept.count, now: now, evictor: use.evictor) else {
                compactIfMostlyDead()
                return 0
            }
        }
        for entry in kept {
            let key = Key(host: entry.host, family: entry.family)
            nextSerial += 1
            entries[entry.host, default: Families()][entry.family] = Stored(entry, serial: nextSerial, use: use)
            storedCount += 1
            let item = ExpiryItem(expiresAt: entry.expiresAt, key: key, serial: nextSerial)
            if entry.negative { negativeExpiries.push(item) } else { positiveExpiries.push(item) }
        }
        compactIfMostlyDead()
        return kept.count
    }

    /// Entries another uid protects that one making of room looks past before giving up: the
    /// cost of one answer is bounded however much of the cache others hold.
    static let protectedScanLimit = 64

    /// Frees `count` slots for `evictor`'s answer (nil: the daemon's): first whatever is
    /// unservable anyway, then the earliest expiries among the entries it may evict (its own,
    /// nobody's, and those past their TTL). False when it could not.
    private func makeSpace(for count: Int, now: MonotonicInstant, evictor: UInt32?) -> Bool {
        prune(now: now)
        var protected: [ExpiryItem] = []
        defer {
            for item in protected {
                if entries[item.key.host]?[item.key.family]?.negative == true {
                    negativeExpiries.push(item)
                } else {
                    positiveExpiries.push(item)
                }
            }
        }
        while storedCount + count > limits.capacity {
            dropDeadTop(&positiveExpiries)
            dropDeadTop(&negativeExpiries)
            let candidate: ExpiryItem?
            switch (positiveExpiries.first, negativeExpiries.first) {
            case (let positive?, let negative?):
                candidate =
                    positive.expiresAt <= negative.expiresAt
                    ? positiveExpiries.popFirst() : negativeExpiries.popFirst()
            case (.some, nil): candidate = positiveExpiries.popFirst()
            case (nil, .some): candidate = negativeExpiries.popFirst()
            case (nil, nil): candidate = nil
            }
            guard let candidate else { return false }
            if entries[candidate.key.host]?[candidate.key.family]?.isEvictable(for: evictor, now: now) == true {
                remove(candidate.key)
            } else {
                protected.append(candidate)
                guard protected.count <= Self.protectedScanLimit else { return false }
            }
        }
        return true
    }

    private func isLive(_ item: ExpiryItem) -> Bool {
        entries[item.key.host]?[item.key.family]?.serial == item.serial
    }

    /// Removes the entry for `key`, and its host's slot once empty; whether there was one.
    @discardableResult
    private func remove(_ key: Key) -> Bool {
        guard let slot = entries.index(forKey: key.host), let stored = entries.values[slot][key.family] else {
            return false
        }
        if stored.needsRefresh { refreshMarks -= 1 }
        entries.values[slot][key.family] = nil
        if entries.values[slot].isEmpty { entries.remove(at: slot) }
        storedCount -= 1
        return true
    }

    private func dropDeadTop(_ heap: inout BinaryHeap<ExpiryItem>) {
        while let top = heap.first, !isLive(top) { heap.popFirst() }
    }

    /// Pops items while the top is dead or `isExpired`; removes the live ones' entries.
    private func drain(_ heap: inout BinaryHeap<ExpiryItem>, while isExpired: (ExpiryItem) -> Bool) -> Int {
        var removed = 0
        while let top = heap.first {
            if isLive(top) {
                guard isExpired(top) else { break }
                remove(top.key)
                removed += 1
            }
            heap.popFirst()
        }
        return removed
    }

    /// Keeps the heaps within a constant factor of the live entry count.
    private func compactIfMostlyDead() {
        let slack = 64
        guard positiveExpiries.count + negativeExpiries.count > 2 * storedCount + slack else { return }
        positiveExpiries.removeAll { !isLive($0) }
        negativeExpiries.removeAll { !isLive($0) }
    }

    /// Nanoseconds to whole seconds, rounded toward positive infinity.
    private static func secondsCeiling(_ nanoseconds: Int64) -> Int64 {
        let perSecond = MonotonicInstant.nanosecondsPerSecond
        let quotient = nanoseconds / perSecond
        return nanoseconds % perSecond > 0 ? quotient + 1 : quotient
    }
}

@available(*, unavailable, message: "DNSCache belongs to one thread (the I/O loop)")
extension DNSCache: Sendable {}

extension Int64 {
    fileprivate func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    fileprivate func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
