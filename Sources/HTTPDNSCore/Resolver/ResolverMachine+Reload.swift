extension ResolverMachine {
    /// `Static=` answers by canonical host name.
    static func staticTable(
        _ answers: [StaticAnswer], rules: any DomainRules
    ) -> [String: (ipv4: [String], ipv6: [String])] {
        var statics: [String: (ipv4: [String], ipv6: [String])] = [:]
        for answer in answers {
            let host = rules.canonicalHost(answer.host) ?? answer.host
            var entry = statics[host] ?? ([], [])
            for address in answer.addresses.compactMap({ IPAddress($0) }) {
                if address.family == .ipv4 {
                    entry.ipv4.append(address.description)
                } else {
                    entry.ipv6.append(address.description)
                }
            }
            statics[host] = entry
        }
        return statics
    }

    /// A reloaded configuration's settings, in force from now on. `Static=` is answered from its
    /// table, so a changed name's answer is the new one at the next request; the cache policy
    /// applies to answers inserted from now on (entries keep their expiry); the query caps and
    /// the rate to queries admitted from now on. An upstream still listed keeps its health and
    /// its recent name; one taken off the list is asked no more, except by the attempt, probe
    /// or batch already running on it, which finishes without a verdict on its health. The
    /// cache, every uid's address memory and the flights stay.
    public mutating func apply(_ new: ResolverSettings) {
        // Old index -> new index, each new upstream taken once, in order.
        var mapping: [Int: Int] = [:]
        var taken = Set<Int>()
        for (old, endpoint) in settings.upstreams.enumerated() {
            if let index = new.upstreams.indices.first(where: { !taken.contains($0) && new.upstreams[$0] == endpoint })
            {
                mapping[old] = index
                taken.insert(index)
            }
        }
        if new.upstreams != settings.upstreams {
            for (old, endpoint) in settings.upstreams.enumerated() where mapping[old] == nil {
                retiredUpstreams.append(endpoint)
                mapping[old] = -1 - retiredUpstreams.count
            }
            remapUpstreams(mapping, count: new.upstreams.count)
        }
        settings = new
        statics = Self.staticTable(new.staticAnswers, rules: rules)
        cache.limits = new.limits
        let ownerCaps = AddressOwnerMemory.capacities(forCacheSize: new.limits.capacity)
        owners.resize(capacityPerUser: ownerCaps.perUser, capacity: ownerCaps.total)
        queue.limits = new.flightLimits
        rate.perSecond = new.queryRatePerUser
        rate.burst = new.queryBurstPerUser
    }

    /// Moves everything that names an upstream by its index to the new list's indices (`mapping`
    /// sends a removed one to its retired index).
    private mutating func remapUpstreams(_ mapping: [Int: Int], count: Int) {
        func moved(_ index: Int) -> Int { index >= 0 ? mapping[index] ?? index : index }
        var healths = Array(repeating: UpstreamHealth(), count: count)
        for (old, health) in self.healths.enumerated() {
            if let index = mapping[old], index >= 0 { healths[index] = health }
        }
        self.healths = healths
        lastAnswered = Dictionary(uniqueKeysWithValues: lastAnswered.map { (moved($0.key), $0.value) })
        probes = Dictionary(uniqueKeysWithValues: probes.map { (moved($0.key), $0.value) })
        probeUpstreams = probeUpstreams.mapValues(moved)
        batches = batches.mapValues { PrefetchBatch(hosts: $0.hosts, upstream: moved($0.upstream)) }
        batchRefreshes = batchRefreshes.mapValues { PrefetchBatch(hosts: $0.hosts, upstream: moved($0.upstream)) }
        for (id, var flight) in flights where !flight.candidates.isEmpty {
            // What was asked keeps its place; a removed upstream not asked yet is left out.
            let asked = (flight.attempt?.position ?? -1) + 1
            let pending = flight.candidates[asked...].map(moved).filter { $0 >= -1 }
            flight.candidates = flight.candidates[..<asked].map(moved) + pending
            flights[id] = flight
        }
    }
}
