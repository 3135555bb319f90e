import HTTPDNSProtocol

/// A jar's cookies in buckets, and every read of them in place.
///
/// A bucket holds the cookies whose domain has one registrable domain (or the domain itself when
/// it has none: IP literals, public suffixes set host-only), which it is keyed by. A bucket key is
/// thus a suffix of every domain in its bucket, so a lookup for a host visits only the buckets
/// named by the host's own suffixes.
///
/// The table is private, and its invariant is held here rather than by each caller:
/// - every write (`insert`, `replace`, `remove`, `removeAll`) moves `version` on, unless it
///   changes nothing a retrieval reads, so that a header remembered at an older version is never
///   served;
/// - only `insert` adds a bucket and only `remove` and `removeAll` take one away, and each clears
///   the remembered places of buckets (`Slot`s), which adding or removing a bucket moves (using a
///   stale one traps).
///
/// Reads go through pointers to where a cookie is stored: a cookie bound to a name, or passed by
/// value, is a copy that retains its four strings.
struct CookieBuckets {
    /// A bucket's place in the table: valid while no bucket is added or removed.
    typealias Slot = Dictionary<String, [StoredCookie]>.Index

    struct StoredCookie {
        var cookie: Cookie
        /// When it was last set or sent (`accessClock`): the least recently used goes first.
        var accessOrder: UInt64
    }

    /// Where one cookie is: valid until the buckets change.
    struct Location {
        var slot: Slot
        var index: Int
    }

    /// Bounds each of the caches below (cleared whole when full).
    private static let cacheLimit = 4096

    private let rules: any DomainRules
    private var table: [String: [StoredCookie]] = [:]
    /// `candidateSlots` per host: a retrieval then costs one lookup, not one per parent domain and
    /// then one per bucket. Cleared whenever a bucket appears or goes.
    private var candidateCache: [String: [Slot]] = [:]
    /// `bucketKey` per domain, and whether the domain has a registrable domain: the suffix list
    /// is not consulted again for a domain the jar has stored under (a libpsl lookup was a tenth
    /// of a set). The list does not change while the daemon runs.
    private var bucketKeyCache: [String: (key: String, isRegistrable: Bool)] = [:]
    /// A counter moved on by every set and every retrieval: exact LRU order even within one second.
    private var accessClock: UInt64 = 0
    /// Moved on by every change a retrieval could see.
    private(set) var version: UInt64 = 0
    /// Cookies in all buckets.
    private(set) var count = 0
    /// No stored cookie expires before it (nil: none was stored with an expiry since the last
    /// `settleEarliestExpiry`). A lower bound: removals and replacements leave it where it was.
    private(set) var earliestExpiry: Int64?
    /// The jar's least recently used cookies at the last scan, oldest first, and the first one
    /// not yet found gone (`leastRecentlyUsed`).
    private var oldest: [(order: UInt64, bucket: String, key: CookieKey)] = []
    private var oldestNext = 0
    /// How many cookies a scan for `oldest` keeps: evictions in a row scan the jar once per this many.
    static let oldestBatch = 64

    init(rules: any DomainRules) {
        self.rules = rules
    }

    /// The bucket key of a canonical domain.
    mutating func bucketKey(_ domain: String) -> String {
        bucketKeyAndKind(domain).key
    }

    /// The bucket key, and whether `domain` is at or below a registrable domain.
    private mutating func bucketKeyAndKind(_ domain: String) -> (key: String, isRegistrable: Bool) {
        if let cached = bucketKeyCache[domain] { return cached }
        let registrable = rules.registrableDomain(domain)
        let entry = (key: registrable ?? domain, isRegistrable: registrable != nil)
        if bucketKeyCache.count >= Self.cacheLimit { bucketKeyCache.removeAll() }
        bucketKeyCache[domain] = entry
        return entry
    }

    // MARK: - Reads

    /// Every bucket by key (a reference to the table, not a copy).
    var byBucket: [String: [StoredCookie]] { table }

    /// The cookies of one bucket (empty when there is none).
    func storedCookies(inBucket bucket: String) -> [StoredCookie] { table[bucket] ?? [] }

    /// How many cookies `bucket` holds.
    func count(inBucket bucket: String) -> Int { table[bucket]?.count ?? 0 }

    /// The key of the bucket at `slot`.
    func bucketKey(at slot: Slot) -> String { table.keys[slot] }

    /// Where the cookie with `key` is in `bucket`.
    @inline(__always)
    func location(of key: CookieKey, inBucket bucket: String) -> Location? {
        guard let slot = table.index(forKey: bucket) else { return nil }
        // Through a pointer: `firstIndex(where:)` hands each element over as a copy.
        let index = table.values[slot].withUnsafeBufferPointer { cookies in
            cookies.indices.first { Cookie.has(cookies.baseAddress!.advanced(by: $0).pointer(to: \.cookie)!, key: key) }
        }
        return index.map { Location(slot: slot, index: $0) }
    }

    /// `body` with the cookie at `location`, where it is stored.
    @inline(__always)
    func withCookie<R>(at location: Location, _ body: (UnsafePointer<Cookie>) -> R) -> R {
        table.values[location.slot].withUnsafeBufferPointer { cookies in
            body((cookies.baseAddress! + location.index).pointer(to: \.cookie)!)
        }
    }

    /// How `new` (with the same key) compares with the cookie at `location`: whether every
    /// retrieval answers as before (`Cookie.retrievesAs`), and whether it stores exactly what is
    /// stored (`Cookie.isStored`).
    @inline(__always)
    func compare(_ new: Cookie, withCookieAt location: Location) -> (retrievesAsBefore: Bool, storedAsBefore: Bool) {
        withCookie(at: location) { stored in (Cookie.retrievesAs(stored, new), Cookie.isStored(stored, as: new)) }
    }

    /// A copy of the cookie at `location`.
    func cookie(at location: Location) -> Cookie { table.values[location.slot][location.index].cookie }

    /// How many cookies the bucket at `slot` holds.
    @inline(__always)
    func cookieCount(inSlot slot: Slot) -> Int { table.values[slot].count }

    /// `body` with each cookie of the bucket at `slot` and its index there, where it is stored.
    @inline(__always)
    func forEachCookie(inSlot slot: Slot, _ body: (_ index: Int, _ cookie: UnsafePointer<Cookie>) -> Void) {
        table.values[slot].withUnsafeBufferPointer { cookies in
            guard let first = cookies.baseAddress else { return }
            for index in cookies.indices { body(index, (first + index).pointer(to: \.cookie)!) }
        }
    }

    /// The buckets that can hold cookies for `host`: those keyed by the host or one of its parent
    /// domains.
    mutating func candidateSlots(forHost host: String, isIPLiteral: Bool) -> [Slot] {
        if isIPLiteral { return table.index(forKey: host).map { [$0] } ?? [] }
        if let cached = candidateCache[host] { return cached }
        let slots = findCandidateSlots(forHost: host)
        if candidateCache.count >= Self.cacheLimit { candidateCache.removeAll() }
        candidateCache[host] = slots
        return slots
    }

    private func findCandidateSlots(forHost host: String) -> [Slot] {
        var slots: [Slot] = []
        var candidate = Substring(host)
        while true {
            if let slot = table.index(forKey: String(candidate)) { slots.append(slot) }
            guard let dot = candidate.firstIndex(of: ".") else { break }
            candidate = candidate[candidate.index(after: dot)...]
            if candidate.isEmpty { break }
        }
        return slots
    }

    /// Bucket keys that can hold a cookie whose domain domain-matches `domain` or is
    /// domain-matched by it.
    ///
    /// At or below a registrable domain, those are among the domain's own suffixes (a
    /// subdomain's cookies are in the domain's bucket): a lookup per label. Only a domain with
    /// none (a public suffix, a single label) needs a scan of the keys, by bytes, not by parsing
    /// each key as an IP address, which would make a set in a large jar slow.
    mutating func bucketKeys(relatedTo domain: String) -> [String] {
        if IPLiteral.isIPLiteral(domain) { return table[domain] == nil ? [] : [domain] }
        guard bucketKeyAndKind(domain).isRegistrable else {
            return table.keys.filter { key in
                // A key matched as a subdomain must not be an IP address; only such a match parses.
                CookieMatching.domainMatches(domain, domain: key, stringIsIPLiteral: false)
                    || (CookieMatching.domainMatches(key, domain: domain, stringIsIPLiteral: false)
                        && (key.utf8.count == domain.utf8.count || !IPLiteral.isIPLiteral(key)))
            }
        }
        return findCandidateSlots(forHost: domain).map { table.keys[$0] }
    }

    // MARK: - Writes

    /// Adds a cookie (whose key the bucket does not hold) as the most recently used.
    mutating func insert(_ cookie: consuming Cookie, inBucket bucket: String) {
        noteExpiry(cookie.expires)
        accessClock += 1
        version &+= 1
        if table[bucket] == nil { candidateCache.removeAll() }
        table[bucket, default: []].append(StoredCookie(cookie: cookie, accessOrder: accessClock))
        count += 1
    }

    /// Replaces the cookie at `location` (same key) in its place, as the most recently used: no
    /// bucket shifts, empties or reappears. Order in a bucket means nothing: retrieval sorts, and
    /// eviction goes by access order. `retrievesAsBefore`: every retrieval answers as before
    /// (`Cookie.retrievesAs`), so the version stays.
    @inline(__always)
    mutating func replace(at location: Location, with cookie: consuming Cookie, retrievesAsBefore: Bool) {
        noteExpiry(cookie.expires)
        accessClock += 1
        if !retrievesAsBefore { version &+= 1 }
        table.values[location.slot][location.index] = StoredCookie(cookie: cookie, accessOrder: accessClock)
    }

    /// Marks the cookie at `location` as sent now (RFC 6265bis 5.8.3 step 3), the most recently
    /// used. Retrievals do not read last-access: the version stays.
    @inline(__always)
    mutating func touch(_ location: Location, now: Int64) {
        accessClock += 1
        let order = accessClock
        table.values[location.slot].withUnsafeMutableBufferPointer { cookies in
            cookies[location.index].cookie.lastAccess = now
            cookies[location.index].accessOrder = order
        }
    }

    /// Removes the cookie at `location`, and its bucket once empty.
    @discardableResult
    mutating func remove(at location: Location) -> Cookie {
        version &+= 1
        let removed = table.values[location.slot].remove(at: location.index).cookie
        if table.values[location.slot].isEmpty {
            table.remove(at: location.slot)
            candidateCache.removeAll()
        }
        count -= 1
        return removed
    }

    /// Removes the cookie with `key` from `bucket`, if there.
    mutating func remove(_ key: CookieKey, inBucket bucket: String) -> Cookie? {
        guard let location = location(of: key, inBucket: bucket) else { return nil }
        return remove(at: location)
    }

    /// Removes every cookie of `bucket` that `shouldRemove` selects; returns their keys in order.
    mutating func removeAll(inBucket bucket: String, where shouldRemove: (Cookie) -> Bool) -> [CookieKey] {
        guard let slot = table.index(forKey: bucket) else { return [] }
        // Looked at before changed: most calls remove nothing, and then the bucket is not copied.
        guard table.values[slot].contains(where: { shouldRemove($0.cookie) }) else { return [] }
        version &+= 1
        var removed: [CookieKey] = []
        table.values[slot].removeAll { stored in
            guard shouldRemove(stored.cookie) else { return false }
            removed.append(stored.cookie.key)
            return true
        }
        if table.values[slot].isEmpty {
            table.remove(at: slot)
            candidateCache.removeAll()
        }
        count -= removed.count
        return removed
    }

    // MARK: - Expiry and eviction, without a scan per cookie

    @inline(__always)
    private mutating func noteExpiry(_ expires: Int64?) {
        guard let expires else { return }
        if earliestExpiry.map({ expires < $0 }) ?? true { earliestExpiry = expires }
    }

    /// Whether a cookie may have expired by `now` (false: none has).
    func mayHoldExpired(at now: Int64) -> Bool { earliestExpiry.map { $0 <= now } ?? false }

    /// Makes `earliestExpiry` exact: a scan, done after a purge.
    mutating func settleEarliestExpiry() {
        var earliest: Int64?
        for cookies in table.values {
            for stored in cookies {
                if let expires = stored.cookie.expires, earliest.map({ expires < $0 }) ?? true { earliest = expires }
            }
        }
        earliestExpiry = earliest
    }

    /// The least recently used cookie of the whole jar other than `excluding`, and its bucket.
    ///
    /// Exact without a scan per call. A scan keeps the `oldestBatch` oldest cookies with their
    /// orders; an order only grows (every set and send takes the clock's next value, and a new
    /// cookie a newer one), so every cookie not kept, or kept but changed since, is newer than
    /// every kept one still unchanged: the first of those is the oldest in the jar.
    mutating func leastRecentlyUsed(excluding: CookieKey?) -> (key: CookieKey, bucket: String)? {
        for scanned in [false, true] {
            if scanned { scanOldest(excluding: excluding) }
            var index = oldestNext
            while index < oldest.count {
                let candidate = oldest[index]
                if let location = location(of: candidate.key, inBucket: candidate.bucket),
                    table.values[location.slot][location.index].accessOrder == candidate.order
                {
                    if candidate.key != excluding { return (candidate.key, candidate.bucket) }
                } else if index == oldestNext {
                    oldestNext += 1
                }
                index += 1
            }
        }
        return nil
    }

    /// Keeps the `oldestBatch` oldest cookies other than `excluding`, oldest first.
    private mutating func scanOldest(excluding: CookieKey?) {
        var orders: [UInt64] = []
        orders.reserveCapacity(count)
        for cookies in table.values {
            for stored in cookies { orders.append(stored.accessOrder) }
        }
        orders.sort()
        // One more than the batch: `excluding` may be among them.
        let threshold = orders.isEmpty ? 0 : orders[min(Self.oldestBatch, orders.count - 1)]
        oldest.removeAll(keepingCapacity: true)
        oldestNext = 0
        for (bucket, cookies) in table {
            for stored in cookies where stored.accessOrder <= threshold && stored.cookie.key != excluding {
                oldest.append((stored.accessOrder, bucket, stored.cookie.key))
            }
        }
        oldest.sort { $0.order < $1.order }
    }
}
