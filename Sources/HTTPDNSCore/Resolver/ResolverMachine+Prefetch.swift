import HTTPDNSProtocol

extension ResolverMachine {
    /// Prefetched hosts are refreshed at this fraction of their TTL (Tencent's keep-alive uses 75 %).
    public static let prefetchRefreshFraction = 0.75

    /// Resolves the `Prefetch=` hosts now and again before each answer expires, in batches of 5
    /// names a request for the names whose route prefers an upstream that batches (Alibaba, the
    /// paid Tencent forms). Prefetched
    /// answers fill the cache only: no uid was handed them, so nobody's IP -> host memory learns
    /// from them.
    public mutating func startPrefetch(now: MonotonicInstant) {
        var hosts: [String] = []
        for raw in settings.prefetch {
            guard let host = try? canonicalName(raw) else {
                emit(.log(.warning, "Prefetch=\(raw) is not a valid host name; skipped"))
                continue
            }
            if !hosts.contains(host) { hosts.append(host) }
        }
        var batched: [Int: [String]] = [:]
        var batchOrder: [Int] = []
        for host in hosts {
            let route = settings.routing.upstreams(for: host)
            if let index = UpstreamHealth.tryOrder(healths, among: route, now: now).first,
                settings.upstreams[index].batchesPrefetch
            {
                if batched[index] == nil { batchOrder.append(index) }
                batched[index, default: []].append(host)
            } else {
                prefetch(host, now: now)
            }
        }
        for index in batchOrder {
            let descriptor = settings.upstreams[index].descriptor
            for group in descriptor.batches(batched[index] ?? []) { prefetchBatch(group, upstream: index, now: now) }
        }
    }

    /// Resolves one prefetched name (both families), in a flight of the daemon's own; the
    /// daemon's own flights are never refused.
    mutating func prefetch(_ host: String, now: MonotonicInstant) {
        _ = join(
            FlightKey(host: host, family: .both), owner: .daemon, background: true, prefetch: true, waiter: nil,
            now: now)
    }

    /// After a prefetched name's flight: its refresh before expiry.
    mutating func schedulePrefetch(_ host: String, now: MonotonicInstant) {
        let delay = refreshDelay(after: secondsToExpiry(of: host, now: now))
        emit(.armTimer(.prefetch(host), at: now.advanced(byNanoseconds: Int64(delay * 1000) * 1_000_000)))
    }

    /// Queues one batch request for `hosts` through the upstream at `index`.
    mutating func prefetchBatch(_ hosts: [String], upstream index: Int, now: MonotonicInstant) {
        let id = makeID()
        _ = queue.admit(id, owner: .daemon)
        batches[id] = PrefetchBatch(hosts: hosts, upstream: index)
        pump(now: now)
    }

    /// A batch request ended: its answers are cached; names it did not answer go through the
    /// normal path (with failover); the others are refreshed when their answers near expiry,
    /// names due together in one batch again.
    public mutating func batchFinished(
        _ id: UInt64, _ result: Result<[String: UpstreamAnswer], UpstreamError>, now: MonotonicInstant
    ) {
        guard let batch = batches.removeValue(forKey: id) else { return }
        queue.finish(id)
        let askedBeforeNetworkChange = flightsBeforeNetworkChange.remove(id) != nil
        let endpoint = endpoint(batch.upstream)
        var missing = batch.hosts
        switch result {
        case .success(let answers):
            if batch.upstream >= 0 {
                healths[batch.upstream].recordSuccess(latencyMs: 0, now: now)
                serviceAnswered(batch.upstream, address: batch.address, now: now)
            }
            for (host, answer) in answers where batch.hosts.contains(host) {
                cache.insert(
                    host: host, parts: IPFamily.allCases.map { CachePart(answer, family: $0) }, upstream: endpoint.name,
                    now: now)
                if askedBeforeNetworkChange { cache.markForRefresh(host: host) }
            }
            missing = batch.hosts.filter { answers[$0] == nil }
        case .failure(let error):
            if batch.upstream >= 0 {
                healths[batch.upstream].recordFailure(error.description, by: .daemon, now: now)
                serviceFailed(batch.upstream, address: batch.address, error, now: now)
            }
            emit(.log(.warning, "Prefetch through \(endpoint.name) failed: \(error)"))
        }
        for host in missing { prefetch(host, now: now) }
        var due: [Int: [String]] = [:]
        for host in batch.hosts where !missing.contains(host) {
            due[Int(refreshDelay(after: secondsToExpiry(of: host, now: now))), default: []].append(host)
        }
        for (seconds, group) in due {
            let refresh = makeID()
            batchRefreshes[refresh] = PrefetchBatch(hosts: group, upstream: batch.upstream)
            emit(.armTimer(.prefetchBatch(refresh), at: now.advanced(bySeconds: seconds)))
        }
        pump(now: now)
    }

    /// Seconds until the first of a name's cached answers expires (nil when none is cached).
    private func secondsToExpiry(of host: String, now: MonotonicInstant) -> Double? {
        IPFamily.allCases.compactMap { cache.peek(host: host, family: $0) }
            .filter { !$0.negative }.map { Double($0.expiresAt.nanoseconds(since: now)) / 1e9 }.min()
    }

    /// Refreshes before expiry; without an answer, retries after the negative TTL.
    private func refreshDelay(after seconds: Double?) -> Double {
        seconds.map { max(1, $0 * Self.prefetchRefreshFraction) } ?? Double(max(1, settings.negativeTTLMs / 1000))
    }
}
