/// Which host name each IP address handed out by the resolver belongs to: the memory behind
/// cookie domain normalization (a cookie set by a response fetched from an IP is stored under the
/// host name that most recently resolved to that IP, API.md "Domain normalization").
///
/// Entries outlive the DNS TTL by `retention`, because apps keep using an IP after its record
/// expires; the map is bounded by `capacity` with least-recently-used eviction. Time is injected;
/// one thread owns an instance.
public final class AddressOwnerMemory {
    /// Most IPs remembered. Default 16384: four times the DNS cache cap (an answer often carries
    /// several addresses, and IPs are kept longer than answers).
    public let capacity: Int
    /// Seconds an IP stays attributed to its host after the answer's TTL ran out. Default 1 day.
    public let retention: Int

    /// Longest TTL believed when restoring, so a wall clock set backwards cannot make a restored
    /// entry immortal: RFC 8767 section 4's suggested TTL cap of 7 days.
    static let longestRestoredTTL = 604_800

    private struct Node {
        var ip: String
        var host: String
        var expiresAt: MonotonicInstant
        /// Neighbours in recency order; -1 ends the list.
        var newer: Int
        var older: Int
    }

    /// Nodes in a flat array linked by index (no per-node allocation); `free` recycles slots.
    private var nodes: [Node] = []
    private var freeSlots: [Int] = []
    private var slotByIP: [String: Int] = [:]
    private var newest = -1
    private var oldest = -1

    public init(capacity: Int = 16_384, retention: Int = 86_400) {
        precondition(capacity > 0, "the memory needs room for at least one address")
        self.capacity = capacity
        self.retention = max(0, retention)
    }

    /// Number of IPs remembered (some may have expired and not been pruned yet).
    public var count: Int { slotByIP.count }

    /// Attributes each of `addresses` (canonical strings) to `host`, replacing an older owner:
    /// the most recent answer wins. Kept for `ttl` + `retention` seconds from `now`.
    public func record(host: String, addresses: [String], ttl: Int, now: MonotonicInstant) {
        let expiresAt = now.advanced(bySeconds: max(ttl, 0)).advanced(bySeconds: retention)
        for ip in addresses { upsert(ip: ip, host: host, expiresAt: expiresAt) }
    }

    /// The host most recently resolved to `ip`, unless that was longer ago than TTL + retention.
    public func owner(of ip: String, now: MonotonicInstant) -> String? {
        guard let slot = slotByIP[ip] else { return nil }
        guard now < nodes[slot].expiresAt else {
            remove(slot: slot)
            return nil
        }
        moveToNewest(slot)
        return nodes[slot].host
    }

    /// Forgets every expired attribution. O(n); meant for a periodic timer, not the hot path.
    ///
    /// - Returns: the number of IPs forgotten.
    @discardableResult
    public func prune(now: MonotonicInstant) -> Int {
        let expired = slotByIP.values.filter { nodes[$0].expiresAt <= now }
        for slot in expired { remove(slot: slot) }
        return expired.count
    }

    /// Forgets everything.
    public func removeAll() {
        nodes.removeAll()
        freeSlots.removeAll()
        slotByIP.removeAll()
        newest = -1
        oldest = -1
    }

    /// Every live attribution, least recently used first (so `restore` rebuilds the same order),
    /// with expiry as Unix seconds rounded up.
    public func snapshot(now: MonotonicInstant, wallNow: Int64) -> [PersistedAddressOwner] {
        var result: [PersistedAddressOwner] = []
        result.reserveCapacity(slotByIP.count)
        var slot = oldest
        while slot >= 0 {
            let node = nodes[slot]
            if now < node.expiresAt {
                let nanoseconds = node.expiresAt.nanoseconds(since: now)
                let perSecond = MonotonicInstant.nanosecondsPerSecond
                let seconds = nanoseconds / perSecond + (nanoseconds % perSecond > 0 ? 1 : 0)
                let (expiresAtUnix, overflow) = wallNow.addingReportingOverflow(seconds)
                result.append(
                    PersistedAddressOwner(ip: node.ip, host: node.host, expiresAtUnix: overflow ? .max : expiresAtUnix))
            }
            slot = node.newer
        }
        return result
    }

    /// Loads attributions saved by `snapshot`, oldest first. An IP already recorded since start is
    /// newer knowledge and is kept. Expired ones are dropped.
    ///
    /// - Returns: the number of attributions restored.
    @discardableResult
    public func restore(_ persisted: [PersistedAddressOwner], now: MonotonicInstant, wallNow: Int64) -> Int {
        var restored = 0
        for item in persisted where slotByIP[item.ip] == nil {
            let (remaining, overflow) = item.expiresAtUnix.subtractingReportingOverflow(wallNow)
            let ceiling = Int64(retention + Self.longestRestoredTTL)
            let seconds = overflow ? ceiling : min(remaining, ceiling)
            guard seconds > 0 else { continue }
            upsert(ip: item.ip, host: item.host, expiresAt: now.advanced(bySeconds: Int(seconds)))
            restored += 1
        }
        return restored
    }

    // MARK: - The recency list

    private func upsert(ip: String, host: String, expiresAt: MonotonicInstant) {
        if let slot = slotByIP[ip] {
            nodes[slot].host = host
            nodes[slot].expiresAt = expiresAt
            moveToNewest(slot)
            return
        }
        if slotByIP.count >= capacity, oldest >= 0 { remove(slot: oldest) }
        let node = Node(ip: ip, host: host, expiresAt: expiresAt, newer: -1, older: newest)
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

    private func remove(slot: Int) {
        unlink(slot)
        slotByIP[nodes[slot].ip] = nil
        nodes[slot].host = ""
        nodes[slot].ip = ""
        freeSlots.append(slot)
    }

    private func moveToNewest(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    private func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private func unlink(_ slot: Int) {
        let older = nodes[slot].older
        let newer = nodes[slot].newer
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        nodes[slot].older = -1
        nodes[slot].newer = -1
    }
}

@available(*, unavailable, message: "AddressOwnerMemory belongs to one thread (the I/O loop)")
extension AddressOwnerMemory: Sendable {}

/// An IP -> host attribution in a form that survives a restart (expiry in Unix seconds).
public struct PersistedAddressOwner: Sendable, Equatable {
    /// Canonical IP address text.
    public var ip: String
    public var host: String
    /// Unix seconds after which the attribution is forgotten.
    public var expiresAtUnix: Int64

    public init(ip: String, host: String, expiresAtUnix: Int64) {
        self.ip = ip
        self.host = host
        self.expiresAtUnix = expiresAtUnix
    }
}
