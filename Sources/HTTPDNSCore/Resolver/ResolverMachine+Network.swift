import HTTPDNSProtocol

extension ResolverMachine {
    /// The machine's network changed (`NetworkChangeMachine`): HTTPDNS answers were chosen for the
    /// network the query came from, so `policy` marks every cached host answer for refresh or
    /// drops it. Answers that flights still asking will bring were asked for on the old network:
    /// they come marked. The `Prefetch=` names are asked again at once. `Static=` answers are not
    /// in the cache and never change; the per-uid address memory (cookie normalization) stays.
    ///
    /// - Returns: how many cache entries were marked or dropped.
    public mutating func networkChanged(_ policy: NetworkChangePolicy, now: MonotonicInstant) -> Int {
        let touched: Int
        switch policy {
        case .ignore: return 0
        case .refresh: touched = cache.markAllForRefresh()
        case .flush: touched = cache.flush(host: nil)
        }
        // Replaced, not added to: a flight of an earlier change still running is among these, and
        // one dropped from the queue since (never finished) is forgotten. Prefetch batches are
        // flights too, of several names.
        flightsBeforeNetworkChange = Set(flights.keys).union(batches.keys)
        for raw in settings.prefetch {
            guard let host = try? canonicalName(raw) else { continue }
            _ = join(
                FlightKey(host: host, family: .both), owner: .daemon, background: true, prefetch: true,
                localOnly: true, now: now)
        }
        return touched
    }

    /// After a fresh answer: when the network changed since it came, its name is asked again in
    /// the background (in the name of `uid`, as a stale answer's refresh), of this machine's
    /// upstreams only, while the caller already has the answer.
    mutating func refreshIfNetworkChanged(_ host: String, family: AddressFamily, uid: UInt32, now: MonotonicInstant) {
        guard cache.refreshMarks > 0, cache.needsRefresh(host: host, families: family.families) else { return }
        _ = join(FlightKey(host: host, family: family), owner: .user(uid), background: true, localOnly: true, now: now)
    }
}
