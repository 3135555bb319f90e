/// Which host names each IP address was handed out for, per uid: the memory behind cookie domain
/// normalization and `reverse` (a cookie set by a response fetched from an IP is stored under the
/// host name that IP was resolved for).
///
/// It is per uid because whose login a cookie is must not be something one user can steer for
/// another: only a uid's own answers feed its memory. Per address it keeps that uid's host names,
/// most recent first, at most `maxHostsPerAddress`. An attribution outlives the answer's TTL by
/// `retention`, because apps keep using an IP after its record expires; once that has passed the
/// host is no longer a candidate.
///
/// Bounded twice, by addresses: `capacityPerUser` per uid (least recently used first out) and
/// `capacity` in total (both follow `CacheSize=`: see `sized(forCacheSize:)`), where room is made at the expense of the uid remembering the most, so a
/// uid that fills the memory only ever evicts its own entries while it holds the most. Both
/// bounds count accounts (`accountOf`: a user with its subordinate uids), so a rootless
/// container's many uids hold no more than one uid, and evict only their own. Time is injected;
/// one thread owns an instance.
public final class AddressOwnerMemory {
    /// Most addresses remembered for one uid. Default 4096: the DNS cache's default size.
    public private(set) var capacityPerUser: Int
    /// Most addresses remembered in total. Default 32768 (eight uids at their cap; about 6 MB with
    /// one name per address, each of the 8 names an address may keep adding its own).
    public private(set) var capacity: Int
    /// Seconds an attribution is kept after the answer's TTL ran out. Default 1 day.
    public let retention: Int
    /// Host names kept per address and uid (a CDN address shared by more names is ambiguous
    /// anyway); the least recent goes first.
    public static let maxHostsPerAddress = 8

    /// Longest TTL believed when restoring, so a wall clock set backwards cannot make a restored
    /// entry immortal: RFC 8767 section 4's suggested TTL cap of 7 days.
    static let longestRestoredTTL = 604_800

    /// One host name an address was handed out for.
    public struct Attribution: Sendable, Equatable {
        public var host: String
        /// When the answer that handed the address out stops being valid (its TTL).
        public var answerExpiresAt: MonotonicInstant
        /// When the attribution is forgotten: the answer's expiry plus `retention`.
        public var forgetAt: MonotonicInstant

        public init(host: String, answerExpiresAt: MonotonicInstant, forgetAt: MonotonicInstant) {
            self.host = host
            self.answerExpiresAt = answerExpiresAt
            self.forgetAt = forgetAt
        }
    }

    /// Per uid, its addresses in a box: a lookup hands out the box, and each change is then one
    /// exclusivity-checked access to the list inside it. (Changing a value in the dictionary in
    /// place goes through its modify coroutine; a class holding the list's arrays directly pays a
    /// dynamic check on every element access. Either was a tenth of a cache hit.)
    private var users: [UInt32: UserBox] = [:]
    /// Addresses remembered over every uid (some may have expired and not been pruned yet).
    public private(set) var count = 0
    /// The account a uid's addresses count against (set once, at its first address).
    public var accountOf: (UInt32) -> UInt32 = { $0 }
    private var accounts: [UInt32: AccountShare] = [:]
    /// The accounts by how many addresses they hold, and the largest count held: the total cap's
    /// victim (the account that remembers the most) without a scan of every account, which many
    /// uids holding an address each would make a cost per insertion.
    private var accountsByCount: [Int: Set<UInt32>] = [:]
    private var largestCount = 0
    private var accountOfUser: [UInt32: UInt32] = [:]

    /// What the uids of one account remember, and those uids in the order they came (eviction
    /// takes from the earliest that holds something; the ones left empty are dropped as passed).
    private struct AccountShare {
        var count = 0
        var uids: [UInt32] = []
        var listed: Set<UInt32> = []
        var head = 0
    }

    public init(capacityPerUser: Int = 4_096, capacity: Int = 32_768, retention: Int = 86_400) {
        precondition(capacityPerUser > 0 && capacity > 0, "the memory needs room for at least one address")
        self.capacityPerUser = capacityPerUser
        self.capacity = capacity
        self.retention = max(0, retention)
    }

    /// The caps for a DNS cache of `cacheSize` entries: a uid remembers as many addresses as the
    /// cache holds answers, so that an address it was handed is still attributed while its answer
    /// can still be cached (a smaller memory made a uid that resolves more names than it holds
    /// lose the attributions its IP URLs' cookies are normalized by, and made every cache hit
    /// evict one); in total, eight uids at the default size or two at a larger one.
    /// Never above `ceilingPerUser` and twice that in all, whatever `CacheSize=` says: attributions
    /// outlive the cache's answers by `retention`, so the memory is bounded on its own.
    public static func capacities(forCacheSize cacheSize: Int) -> (perUser: Int, total: Int) {
        let perUser = min(max(4_096, cacheSize), ceilingPerUser)
        return (perUser, max(32_768, perUser * 2))
    }

    /// The most addresses one uid may be given room for (`capacities(forCacheSize:)`).
    public static let ceilingPerUser = 65_536

    /// Sized for a DNS cache of `cacheSize` entries (`capacities(forCacheSize:)`).
    public convenience init(forCacheSize cacheSize: Int) {
        let caps = Self.capacities(forCacheSize: cacheSize)
        self.init(capacityPerUser: caps.perUser, capacity: caps.total)
    }

    /// New caps (a reload changed `CacheSize=`): what is over them goes now, least recently used
    /// first, as if it had been recorded under them.
    public func resize(capacityPerUser: Int, capacity: Int) {
        precondition(capacityPerUser > 0 && capacity > 0, "the memory needs room for at least one address")
        self.capacityPerUser = capacityPerUser
        self.capacity = capacity
        for uid in Array(users.keys) {
            while let own = users[uid]?.list.count, own > capacityPerUser { evictOldest(of: uid) }
        }
        guard count > capacity else { return }
        // Those who remember the most give back down to one level (the highest that fits), as
        // evicting from the largest one address at a time would leave them, without looking for
        // the largest again after each eviction.
        let counts = users.values.map(\.list.count)
        func kept(atLevel level: Int) -> Int { counts.reduce(0) { $0 + min($1, level) } }
        var low = 0
        var high = counts.max() ?? 0
        while low < high {
            let level = (low + high + 1) / 2
            if kept(atLevel: level) <= capacity { low = level } else { high = level - 1 }
        }
        for uid in Array(users.keys) {
            while let own = users[uid]?.list.count, own > low { evictOldest(of: uid) }
        }
    }

    /// Addresses remembered for `uid`.
    public func count(uid: UInt32) -> Int { users[uid]?.list.count ?? 0 }

    /// The key an address is remembered under: its canonical text, with an IPv4-mapped IPv6
    /// address (`::ffff:a.b.c.d`) read as the IPv4 address, which reaches the same host.
    public static func key(for address: IPAddress) -> String {
        address.unmappingIPv4.description
    }

    /// Records that `addresses` (canonical text) were handed out to `uid` for `host` by an answer
    /// valid for `ttl` more seconds: `host` becomes each address's most recent name for `uid`.
    public func record(uid: UInt32, host: String, addresses: [String], ttl: Int, now: MonotonicInstant) {
        let answerExpiresAt = now.advanced(bySeconds: max(ttl, 0))
        let attribution = Attribution(
            host: host, answerExpiresAt: answerExpiresAt, forgetAt: answerExpiresAt.advanced(bySeconds: retention))
        for address in addresses {
            upsert(uid: uid, ip: Self.key(canonical: address), attribution, now: now)
        }
    }

    /// `uid`'s live host names for `address`, most recent first (empty when none is known).
    public func attributions(uid: UInt32, of address: IPAddress, now: MonotonicInstant) -> [Attribution] {
        let ip = Self.key(for: address)
        guard let live = users[uid]?.list.liveHosts(ip: ip, now: now) else { return [] }
        if live.isEmpty {
            forget(uid: uid, ip: ip)
            return []
        }
        return live
    }

    /// The host names cookie normalization chooses among for `address`, most recent first: every
    /// name remembered, whether its answer is still within its TTL or only retained past it. None is
    /// left out for having expired: a name resolved to the address after another's answer expired
    /// (a co-hosted site, or a zone its owner points anywhere) must not take that site's cookies
    /// over; with several, the request is ambiguous (`CookieRequest`).
    public func normalizationCandidates(uid: UInt32, of address: IPAddress, now: MonotonicInstant) -> [String] {
        attributions(uid: uid, of: address, now: now).map(\.host)
    }

    /// Forgets every expired attribution. O(n); meant for a periodic timer, not the hot path.
    ///
    /// - Returns: the number of addresses forgotten.
    @discardableResult
    public func prune(now: MonotonicInstant) -> Int {
        var forgotten = 0
        for uid in Array(users.keys) {
            guard let removed = users[uid]?.list.prune(now: now) else { continue }
            forgotten += removed
            count -= removed
            charge(uid, -removed)
            if users[uid]?.list.count == 0 { dropUser(uid) }
        }
        return forgotten
    }

    /// Forgets everything.
    public func removeAll() {
        users.removeAll()
        count = 0
        accounts.removeAll()
        accountsByCount.removeAll()
        largestCount = 0
        accountOfUser.removeAll()
    }

    /// Forgets `host` (canonical) for every uid and every address; an address left with no name
    /// is forgotten too. O(n), for `flushCache` of one name.
    ///
    /// - Returns: the number of addresses forgotten.
    @discardableResult
    public func forget(host: String) -> Int {
        var forgotten = 0
        for uid in Array(users.keys) {
            guard let removed = users[uid]?.list.removeHost(host) else { continue }
            forgotten += removed
            count -= removed
            charge(uid, -removed)
            if users[uid]?.list.count == 0 { dropUser(uid) }
        }
        return forgotten
    }

    /// Forgets `uid`'s memory of `address`, every name of it (`forget`).
    ///
    /// - Returns: 1 when the address was remembered, else 0.
    @discardableResult
    public func forget(uid: UInt32, address: IPAddress) -> Int {
        let before = count
        forget(uid: uid, ip: Self.key(for: address))
        return before - count
    }

    /// Forgets everything `uid` remembers (`forget` with `all`).
    ///
    /// - Returns: the number of addresses forgotten.
    @discardableResult
    public func forgetAll(uid: UInt32) -> Int {
        guard let remembered = users[uid]?.list.count else { return 0 }
        count -= remembered
        charge(uid, -remembered)
        dropUser(uid)
        return remembered
    }

    /// The host names `uid` was handed addresses for and still remembers (`showCache` shows a
    /// user only these).
    public func hostNames(uid: UInt32, now: MonotonicInstant) -> Set<String> {
        guard let user = users[uid]?.list else { return [] }
        var names = Set<String>()
        for slot in user.slotsOldestFirst {
            for attribution in user.hosts(at: slot) where now < attribution.forgetAt { names.insert(attribution.host) }
        }
        return names
    }

    /// Every live attribution with expiries as Unix seconds (rounded up), in the order `restore`
    /// replays to rebuild the same recency: per uid, least recently used address first, and per
    /// address its oldest host first.
    public func snapshot(now: MonotonicInstant, wallNow: Int64) -> [PersistedAddressOwner] {
        var result: [PersistedAddressOwner] = []
        result.reserveCapacity(count)
        for uid in users.keys.sorted() {
            guard let user = users[uid]?.list else { continue }
            for slot in user.slotsOldestFirst {
                for attribution in user.hosts(at: slot).reversed() where now < attribution.forgetAt {
                    result.append(
                        PersistedAddressOwner(
                            uid: uid, ip: user.ip(at: slot), host: attribution.host,
                            answerExpiresAtUnix: Self.unix(attribution.answerExpiresAt, now: now, wallNow: wallNow),
                            expiresAtUnix: Self.unix(attribution.forgetAt, now: now, wallNow: wallNow)))
                }
            }
        }
        return result
    }

    /// Loads attributions saved by `snapshot`, in its order. An address a uid already recorded
    /// since start is newer knowledge and keeps its hosts. Expired ones are dropped; the caps apply.
    ///
    /// - Returns: the number of attributions restored.
    @discardableResult
    public func restore(_ persisted: [PersistedAddressOwner], now: MonotonicInstant, wallNow: Int64) -> Int {
        struct UserAddress: Hashable {
            var uid: UInt32
            var ip: String
        }
        var known: Set<UserAddress> = []
        for (uid, user) in users {
            for ip in user.list.addresses { known.insert(UserAddress(uid: uid, ip: ip)) }
        }
        var restored = 0
        for item in persisted where !known.contains(UserAddress(uid: item.uid, ip: item.ip)) {
            // The store is not trusted more than an upstream: only real addresses come back.
            guard let address = IPAddress(item.ip) else { continue }
            let ceiling = Int64(retention + Self.longestRestoredTTL)
            let (remaining, overflow) = item.expiresAtUnix.subtractingReportingOverflow(wallNow)
            let forget = overflow ? ceiling : min(remaining, ceiling)
            guard forget > 0 else { continue }
            let (answerRemaining, answerOverflow) = item.answerExpiresAtUnix.subtractingReportingOverflow(wallNow)
            let valid = min(answerOverflow ? forget : answerRemaining, Int64(Self.longestRestoredTTL), forget)
            let attribution = Attribution(
                host: item.host, answerExpiresAt: now.advanced(bySeconds: Int(valid)),
                forgetAt: now.advanced(bySeconds: Int(forget)))
            upsert(uid: item.uid, ip: Self.key(for: address), attribution, now: now)
            restored += 1
        }
        return restored
    }

    // MARK: - Internals

    /// `canonical` under its key, without parsing: the canonical text of an IPv4-mapped address
    /// is exactly `::ffff:` and a dotted quad.
    private static func key(canonical: String) -> String {
        let prefix = "::ffff:"
        // The first byte rules out nearly every address before the slower prefix test.
        guard canonical.utf8.first == UInt8(ascii: ":"), canonical.hasPrefix(prefix),
            canonical.utf8.contains(UInt8(ascii: "."))
        else { return canonical }
        return String(canonical.dropFirst(prefix.count))
    }

    private static func unix(_ instant: MonotonicInstant, now: MonotonicInstant, wallNow: Int64) -> Int64 {
        let nanoseconds = instant.nanoseconds(since: now)
        let perSecond = MonotonicInstant.nanosecondsPerSecond
        var seconds = nanoseconds / perSecond
        if nanoseconds % perSecond > 0 { seconds += 1 }
        let (sum, overflow) = wallNow.addingReportingOverflow(seconds)
        return overflow ? (seconds > 0 ? .max : .min) : sum
    }

    private func upsert(uid: UInt32, ip: String, _ attribution: Attribution, now: MonotonicInstant) {
        if users[uid]?.list.update(ip: ip, with: attribution, now: now) == true { return }
        guard makeRoom(for: uid) else { return }
        // After making room: evicting the uid's last address would have dropped it from `users`.
        let box = users[uid] ?? UserBox()
        users[uid] = box
        box.list.insertNewest(ip: ip, hosts: [attribution])
        count += 1
        charge(uid, 1)
    }

    /// Counts `delta` addresses of `uid` against its account.
    private func charge(_ uid: UInt32, _ delta: Int) {
        guard delta != 0 else { return }
        let account: UInt32
        if let known = accountOfUser[uid] {
            account = known
        } else {
            account = accountOf(uid)
            accountOfUser[uid] = account
            if accounts[account, default: AccountShare()].listed.insert(uid).inserted {
                accounts[account]!.uids.append(uid)
            }
        }
        let before = accounts[account]?.count ?? 0
        accounts[account, default: AccountShare()].count += delta
        let after = max(0, before + delta)
        // Every uid of it holds nothing (each was dropped with its last address).
        if after == 0 { accounts[account] = nil }
        recount(account, from: before, to: after)
    }

    /// Moves `account` between the count buckets; the largest count steps down past emptied
    /// buckets, at most as many steps as addresses were just removed.
    private func recount(_ account: UInt32, from before: Int, to after: Int) {
        if before > 0 {
            accountsByCount[before]?.remove(account)
            if accountsByCount[before]?.isEmpty == true { accountsByCount[before] = nil }
        }
        if after > 0 { accountsByCount[after, default: []].insert(account) }
        if after > largestCount {
            largestCount = after
        } else {
            while largestCount > 0 && accountsByCount[largestCount] == nil { largestCount -= 1 }
        }
    }

    /// A uid with no address left: registered again (with its account) at its next one.
    private func dropUser(_ uid: UInt32) {
        users[uid] = nil
        accountOfUser[uid] = nil
    }

    /// Frees one address for `uid`: its own least recently used one at its cap (its account's
    /// cap, for the uids of one account together); at the total cap, one of the account that
    /// remembers the most (`uid`'s own on a tie). False when there is no room to be had.
    private func makeRoom(for uid: UInt32) -> Bool {
        let own = users[uid]?.list.count ?? 0
        if own >= capacityPerUser {
            evictOldest(of: uid)
            return true
        }
        let account = accountOfUser[uid] ?? accountOf(uid)
        if accounts[account]?.count ?? 0 >= capacityPerUser {
            return evictOne(ofAccount: account, preferring: uid)
        }
        guard count >= capacity else { return true }
        let victim =
            accounts[account]?.count ?? 0 >= largestCount ? account : accountsByCount[largestCount]?.first ?? account
        return evictOne(ofAccount: victim, preferring: uid)
    }

    /// Evicts `uid`'s oldest address when it is of `account` and has one, else the oldest of
    /// the account's earliest uid that holds any.
    private func evictOne(ofAccount account: UInt32, preferring uid: UInt32) -> Bool {
        if accountOfUser[uid] == account, users[uid]?.list.count ?? 0 > 0 {
            evictOldest(of: uid)
            return true
        }
        while var share = accounts[account], share.head < share.uids.count {
            let candidate = share.uids[share.head]
            if accountOfUser[candidate] == account, users[candidate]?.list.count ?? 0 > 0 {
                evictOldest(of: candidate)
                return true
            }
            share.head += 1
            share.listed.remove(candidate)
            if share.head > 64 && share.head * 2 > share.uids.count {
                share.uids.removeFirst(share.head)
                share.head = 0
            }
            accounts[account] = share
        }
        return false
    }

    private func evictOldest(of uid: UInt32) {
        guard let oldest = users[uid]?.list.oldestAddress else { return }
        forget(uid: uid, ip: oldest)
    }

    private func forget(uid: UInt32, ip: String) {
        guard let box = users[uid], box.list.remove(ip: ip) else { return }
        count -= 1
        charge(uid, -1)
        if box.list.count == 0 { dropUser(uid) }
    }
}

@available(*, unavailable, message: "AddressOwnerMemory belongs to one thread (the I/O loop)")
extension AddressOwnerMemory: Sendable {}

/// Holds one uid's `UserAddresses` (see `AddressOwnerMemory.users`).
private final class UserBox {
    var list = UserAddresses()
}

/// One uid's addresses in recency order: nodes in a flat array linked by index (no per-node
/// allocation), with freed slots recycled.
private struct UserAddresses {
    private struct Node {
        var ip: String
        var hosts: [AddressOwnerMemory.Attribution]
        /// Neighbours in recency order; -1 ends the list.
        var newer: Int
        var older: Int
    }

    private var nodes: [Node] = []
    private var freeSlots: [Int] = []
    private var slotByIP: [String: Int] = [:]
    private var newest = -1
    private var oldest = -1

    var count: Int { slotByIP.count }
    var oldestAddress: String? { oldest >= 0 ? nodes[oldest].ip : nil }
    /// Every address, in no particular order.
    var addresses: Dictionary<String, Int>.Keys { slotByIP.keys }

    var slotsOldestFirst: [Int] {
        var result: [Int] = []
        var slot = oldest
        while slot >= 0 {
            result.append(slot)
            slot = nodes[slot].newer
        }
        return result
    }

    func ip(at slot: Int) -> String { nodes[slot].ip }
    func hosts(at slot: Int) -> [AddressOwnerMemory.Attribution] { nodes[slot].hosts }

    /// Makes `attribution` the most recent for an address already remembered, and the address
    /// the most recently used; false when the address is new.
    mutating func update(ip: String, with attribution: AddressOwnerMemory.Attribution, now: MonotonicInstant) -> Bool {
        guard let slot = slotByIP[ip] else { return false }
        if nodes[slot].hosts.first?.host == attribution.host {
            // Every cache hit records its answer again: when `host` is already the address's most
            // recent name, only its expiry changes, in place. (Expired older names stay until the
            // next change; every read filters them.)
            nodes[slot].hosts[0] = attribution
        } else {
            var hosts = nodes[slot].hosts.filter { $0.host != attribution.host && now < $0.forgetAt }
            hosts.insert(attribution, at: 0)
            nodes[slot].hosts = Array(hosts.prefix(AddressOwnerMemory.maxHostsPerAddress))
        }
        moveToNewest(slot)
        return true
    }

    /// The address's unexpired attributions (the expired ones dropped), marking it the most recently
    /// used; nil when it is not remembered, empty when none is left (the caller forgets it).
    mutating func liveHosts(ip: String, now: MonotonicInstant) -> [AddressOwnerMemory.Attribution]? {
        guard let slot = slotByIP[ip] else { return nil }
        let live = nodes[slot].hosts.filter { now < $0.forgetAt }
        guard !live.isEmpty else { return [] }
        nodes[slot].hosts = live
        moveToNewest(slot)
        return live
    }

    /// Drops expired attributions and the addresses left with none; returns how many addresses went.
    mutating func prune(now: MonotonicInstant) -> Int {
        removeAttributions { now >= $0.forgetAt }
    }

    /// Drops `host` from every address, and the addresses left with no name; returns how many
    /// addresses went.
    mutating func removeHost(_ host: String) -> Int {
        removeAttributions { $0.host == host }
    }

    /// Drops the attributions `shouldRemove` selects, and the addresses left with none.
    private mutating func removeAttributions(where shouldRemove: (AddressOwnerMemory.Attribution) -> Bool) -> Int {
        var removed = 0
        for (ip, slot) in slotByIP where nodes[slot].hosts.contains(where: shouldRemove) {
            let left = nodes[slot].hosts.filter { !shouldRemove($0) }
            if left.isEmpty {
                _ = remove(ip: ip)
                removed += 1
            } else {
                nodes[slot].hosts = left
            }
        }
        return removed
    }

    mutating func insertNewest(ip: String, hosts: [AddressOwnerMemory.Attribution]) {
        let node = Node(ip: ip, hosts: hosts, newer: -1, older: -1)
        let slot: Int
        if let reused = freeSlots.popLast() {
            nodes[reused] = node
            slot = reused
        } else {
            nodes.append(node)
            slot = nodes.count - 1
        }
        linkAsNewest(slot)
        slotByIP[ip] = slot
    }

    /// Forgets an address; false when it was not remembered.
    mutating func remove(ip: String) -> Bool {
        guard let slot = slotByIP.removeValue(forKey: ip) else { return false }
        unlink(slot)
        nodes[slot].hosts = []
        nodes[slot].ip = ""
        freeSlots.append(slot)
        return true
    }

    private mutating func moveToNewest(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    private mutating func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let older = nodes[slot].older
        let newer = nodes[slot].newer
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        nodes[slot].older = -1
        nodes[slot].newer = -1
    }
}

/// An IP -> host attribution of one uid in a form that survives a restart (expiries in Unix
/// seconds).
public struct PersistedAddressOwner: Sendable, Equatable {
    public var uid: UInt32
    /// Canonical IP address text.
    public var ip: String
    public var host: String
    /// Unix seconds at which the answer that handed the address out stopped (or stops) being valid.
    public var answerExpiresAtUnix: Int64
    /// Unix seconds after which the attribution is forgotten.
    public var expiresAtUnix: Int64

    public init(uid: UInt32, ip: String, host: String, answerExpiresAtUnix: Int64, expiresAtUnix: Int64) {
        self.uid = uid
        self.ip = ip
        self.host = host
        self.answerExpiresAtUnix = answerExpiresAtUnix
        self.expiresAtUnix = expiresAtUnix
    }
}
