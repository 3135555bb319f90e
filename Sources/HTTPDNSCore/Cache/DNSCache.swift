/// The shared DNS answer cache: per (host, family), TTL-clamped, with negative entries, a
/// serve-stale window, a hard cap evicting the earliest expiry, and hit/miss counters.
///
/// The shape follows systemd-resolved's `DnsCache` (a hash map plus an expiry priority queue plus
/// counters). Time is passed in: `now` is the monotonic clock; wall-clock time appears only at the
/// persistence seam. One thread owns an instance (the daemon's I/O loop), so it is not Sendable.
public final class DNSCache {
    public let limits: DNSCacheLimits
    /// The IP -> host memory fed by every answer inserted here, if the owner wants one.
    public let owners: AddressOwnerMemory?

    /// Lookups answered with a fresh entry (positive or negative).
    public private(set) var hits = 0
    /// Lookups that found nothing fresh, including those answered with a stale entry.
    public private(set) var misses = 0
    /// Stale answers the caller reported as actually served (`noteStaleServed()`).
    public private(set) var staleServed = 0

    private struct Key: Hashable {
        var host: String
        var family: DNSFamily
    }

    private struct Stored {
        var entry: DNSCacheEntry
        /// Matches the heap item pushed for this version of the entry; older items are dead.
        var serial: UInt64
    }

    private var entries: [Key: Stored] = [:]
    /// Positive and negative entries live in separate heaps because they die at different
    /// times (positive ones at expiry + maxStale, negative ones at expiry).
    private var positiveExpiries = ExpiryHeap<Key>()
    private var negativeExpiries = ExpiryHeap<Key>()
    private var nextSerial: UInt64 = 0

    public init(limits: DNSCacheLimits = DNSCacheLimits(), owners: AddressOwnerMemory? = nil) {
        self.limits = limits
        self.owners = owners
    }

    /// Number of entries held, fresh or not.
    public var entryCount: Int { entries.count }

    /// Caches an upstream answer: `addresses` (canonical strings, already validated for `family`)
    /// for `ttl` seconds, clamped to [minTTL, maxTTL]. Every address is recorded in `owners`,
    /// even when the answer is not cached, because the caller hands those addresses out.
    ///
    /// A TTL of 0 after clamping means "use once, do not cache" (RFC 1035 section 3.2.1); it also
    /// removes an older entry for the key, which this answer supersedes. An empty address list is
    /// "no address of this family" and is cached as a negative entry.
    ///
    /// - Returns: whether an entry is now cached for the key.
    @discardableResult
    public func insert(
        host: String,
        family: DNSFamily,
        addresses: [String],
        ttl: Int,
        upstream: String?,
        now: MonotonicInstant
    ) -> Bool {
        if addresses.isEmpty {
            return insertNegative(host: host, family: family, upstream: upstream, now: now)
        }
        let clamped = limits.clamp(ttl: ttl)
        owners?.record(host: host, addresses: addresses, ttl: clamped, now: now)
        let entry = DNSCacheEntry(
            host: host, family: family, addresses: addresses, upstream: upstream,
            expiresAt: now + clamped, negative: false)
        return storeUnlessZero(entry, ttl: clamped, now: now)
    }

    /// Caches "this host has no address of this family" for `negativeTTL`, clamped like any TTL.
    @discardableResult
    public func insertNegative(
        host: String,
        family: DNSFamily,
        upstream: String? = nil,
        now: MonotonicInstant
    ) -> Bool {
        let clamped = limits.clamp(ttl: limits.negativeTTL)
        let entry = DNSCacheEntry(
            host: host, family: family, addresses: [], upstream: upstream,
            expiresAt: now + clamped, negative: true)
        return storeUnlessZero(entry, ttl: clamped, now: now)
    }

    /// Looks a key up and counts the outcome: a fresh entry is a hit, anything else a miss.
    /// With `allowStale`, an expired positive entry within `maxStale` comes back as `.stale`; the
    /// caller then calls `noteStaleServed()` if it really answered with it.
    public func lookup(host: String, family: DNSFamily, now: MonotonicInstant, allowStale: Bool) -> CacheLookup {
        let key = Key(host: host, family: family)
        guard let stored = entries[key] else {
            misses += 1
            return .miss
        }
        let entry = stored.entry
        if now < entry.expiresAt {
            hits += 1
            return .fresh(entry, ttlLeft: Int(now.secondsRoundedUp(until: entry.expiresAt)))
        }
        misses += 1
        guard isServableStale(entry, now: now) else {
            entries[key] = nil  // dead: expired and outside any stale window
            return .miss
        }
        return allowStale ? .stale(entry) : .miss
    }

    /// The entry for a key, fresh or not, without touching the counters (for prefetch timing
    /// and `status`).
    public func peek(host: String, family: DNSFamily) -> DNSCacheEntry? {
        entries[Key(host: host, family: family)]?.entry
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
            let removed = entries.count
            entries.removeAll()
            positiveExpiries.removeAll()
            negativeExpiries.removeAll()
            return removed
        }
        var removed = 0
        for family in DNSFamily.allCases where entries.removeValue(forKey: Key(host: host, family: family)) != nil {
            removed += 1
        }
        compactIfMostlyDead()
        return removed
    }

    /// Every entry still worth keeping, with its expiry converted to Unix seconds (rounded up),
    /// earliest expiry first.
    public func snapshot(now: MonotonicInstant, wallNow: Int64) -> [PersistedDNSEntry] {
        entries.values
            .map(\.entry)
            .filter { now < $0.expiresAt || isServableStale($0, now: now) }
            .sorted { $0.expiresAt < $1.expiresAt }
            .map { entry in
                PersistedDNSEntry(
                    host: entry.host, family: entry.family, addresses: entry.addresses,
                    upstream: entry.upstream,
                    expiresAtUnix: wallNow.addingSaturating(
                        Self.secondsCeiling(entry.expiresAt.nanoseconds(since: now))),
                    negative: entry.negative)
            }
    }

    /// Loads persisted entries after a restart. Each expiry is converted back to the monotonic
    /// clock through `wallNow`; the remaining TTL is clamped to today's limits (the wall clock or
    /// the configuration may have changed). Entries that can no longer be served are dropped, as
    /// are those with an address `isValidAddress` rejects (the store is not trusted more than an
    /// upstream). An entry already cached with a later expiry wins. Counters are not touched.
    ///
    /// - Returns: the number of entries restored.
    @discardableResult
    public func restore(
        _ persisted: [PersistedDNSEntry],
        now: MonotonicInstant,
        wallNow: Int64,
        isValidAddress: (String, DNSFamily) -> Bool = { _, _ in true }
    ) -> Int {
        var restored = 0
        for item in persisted {
            let remaining = item.expiresAtUnix.subtractingSaturating(wallNow)
            let ceiling = item.negative ? limits.clamp(ttl: limits.negativeTTL) : limits.maxTTL
            let ttl = Int(min(remaining, Int64(ceiling)))
            let entry = DNSCacheEntry(
                host: item.host, family: item.family, addresses: item.addresses, upstream: item.upstream,
                expiresAt: now + ttl, negative: item.negative)
            guard item.negative == item.addresses.isEmpty,
                item.addresses.allSatisfy({ isValidAddress($0, item.family) }),
                now < entry.expiresAt || isServableStale(entry, now: now)
            else { continue }
            if let existing = entries[Key(host: item.host, family: item.family)],
                existing.entry.expiresAt >= entry.expiresAt
            {
                continue
            }
            store(entry, now: now)
            restored += 1
        }
        return restored
    }

    // MARK: - Internals

    private func isServableStale(_ entry: DNSCacheEntry, now: MonotonicInstant) -> Bool {
        !entry.negative && now < staleDeadline(of: entry)
    }

    private func staleDeadline(of entry: DNSCacheEntry) -> MonotonicInstant {
        entry.expiresAt.advanced(bySeconds: limits.maxStale)
    }

    /// Stores `entry` unless its TTL is 0, which caches nothing and drops the superseded entry.
    private func storeUnlessZero(_ entry: DNSCacheEntry, ttl: Int, now: MonotonicInstant) -> Bool {
        guard ttl > 0 else {
            entries[Key(host: entry.host, family: entry.family)] = nil
            compactIfMostlyDead()
            return false
        }
        store(entry, now: now)
        return true
    }

    /// Puts `entry` in place of any older one, making room first when the cache is full.
    private func store(_ entry: DNSCacheEntry, now: MonotonicInstant) {
        let key = Key(host: entry.host, family: entry.family)
        if entries[key] == nil, entries.count >= limits.capacity { makeSpace(now: now) }
        nextSerial += 1
        entries[key] = Stored(entry: entry, serial: nextSerial)
        let item = ExpiryHeap<Key>.Item(expiresAt: entry.expiresAt, key: key, serial: nextSerial)
        if entry.negative { negativeExpiries.push(item) } else { positiveExpiries.push(item) }
        compactIfMostlyDead()
    }

    /// Frees at least one slot: first whatever is unservable anyway, then the earliest expiry.
    private func makeSpace(now: MonotonicInstant) {
        prune(now: now)
        while entries.count >= limits.capacity {
            dropDeadTop(&positiveExpiries)
            dropDeadTop(&negativeExpiries)
            let victim: ExpiryHeap<Key>.Item?
            switch (positiveExpiries.first, negativeExpiries.first) {
            case (let positive?, let negative?):
                victim =
                    positive.expiresAt <= negative.expiresAt
                    ? positiveExpiries.popFirst() : negativeExpiries.popFirst()
            case (.some, nil): victim = positiveExpiries.popFirst()
            case (nil, .some): victim = negativeExpiries.popFirst()
            case (nil, nil): victim = nil
            }
            guard let victim else { return }
            entries[victim.key] = nil
        }
    }

    private func isLive(_ item: ExpiryHeap<Key>.Item) -> Bool {
        entries[item.key]?.serial == item.serial
    }

    private func dropDeadTop(_ heap: inout ExpiryHeap<Key>) {
        while let top = heap.first, !isLive(top) { heap.popFirst() }
    }

    /// Pops items while the top is dead or `isExpired`; removes the live ones' entries.
    private func drain(_ heap: inout ExpiryHeap<Key>, while isExpired: (ExpiryHeap<Key>.Item) -> Bool) -> Int {
        var removed = 0
        while let top = heap.first {
            if isLive(top) {
                guard isExpired(top) else { break }
                entries[top.key] = nil
                removed += 1
            }
            heap.popFirst()
        }
        return removed
    }

    /// Keeps the heaps within a constant factor of the live entry count (see `ExpiryHeap`).
    private func compactIfMostlyDead() {
        let slack = 64
        guard positiveExpiries.count + negativeExpiries.count > 2 * entries.count + slack else { return }
        positiveExpiries.compact(keeping: isLive)
        negativeExpiries.compact(keeping: isLive)
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
