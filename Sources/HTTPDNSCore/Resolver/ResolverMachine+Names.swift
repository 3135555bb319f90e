import HTTPDNSProtocol

extension ResolverMachine {
    // MARK: names

    /// IDNA to A-labels, lowercase, syntax-checked: the cache key of a name.
    public func canonicalName(_ raw: String) throws(RPCError) -> String {
        // Already canonical (nearly every request): the checks below would return it unchanged.
        if HostNameSyntax.isCanonical(raw) { return raw }
        guard !raw.isEmpty else { throw .invalidParams(field: "host", "must not be empty") }
        guard let ascii = rules.canonicalHost(raw) else {
            throw .invalidParams(field: "host", "\(RPCError.quoted(raw)) is not a valid host name")
        }
        switch HostName.validate(ascii) {
        case .success(let name): return name
        case .failure(let error): throw .invalidParams(field: "host", "\(RPCError.quoted(raw)): \(error)")
        }
    }

    /// Literal and `Static=` answers never expire; they claim the longest TTL the cache would give.
    func literalResult(_ host: String, _ address: IPAddress, family: AddressFamily) -> ResolveResult {
        let ttl = settings.limits.maxTTL
        return ResolveResult(
            host: host, ipv4: address.family == .ipv4 ? [address.description] : [],
            ipv6: address.family == .ipv6 ? [address.description] : [], ttl: ttl,
            ttls: family == .both ? ResolveResult.FamilyTTLs(ipv4: ttl, ipv6: ttl) : nil, stale: false,
            source: .literal)
    }

    func staticResult(_ host: String, _ fixed: (ipv4: [String], ipv6: [String]), family: AddressFamily)
        -> ResolveResult
    {
        let ttl = settings.limits.maxTTL
        return ResolveResult(
            host: host, ipv4: family.includes(.ipv4) ? fixed.ipv4 : [], ipv6: family.includes(.ipv6) ? fixed.ipv6 : [],
            ttl: ttl, ttls: family == .both ? ResolveResult.FamilyTTLs(ipv4: ttl, ipv6: ttl) : nil, stale: false,
            source: .static)
    }

    /// RFC 6761's localhost names, which never leave the machine.
    public static func isLocalhost(_ host: String) -> Bool { host == "localhost" || host.hasSuffix(".localhost") }

    // MARK: the address memory

    /// `uid`'s host names for the address `ip`, most recent first: what cookie normalization reads.
    public func hostNames(of ip: String, uid: UInt32, now: MonotonicInstant) -> [String] {
        guard let address = IPAddress(ip) else { return [] }
        return owners.normalizationCandidates(uid: uid, of: address, now: now)
    }

    /// `reverse`: the host names `address` was handed out for to `uid`, most recent first.
    public func reverse(_ params: ReverseParams, uid: UInt32, now: MonotonicInstant) throws(RPCError)
        -> ReverseResult
    {
        guard let address = IPAddress(params.address) else {
            throw .invalidParams(field: "address", "\(RPCError.quoted(params.address)) is not an IPv4 or IPv6 literal")
        }
        let attributions = owners.attributions(uid: uid, of: address, now: now)
        guard let latest = attributions.first else { throw .addressNotFound(address.description) }
        return ReverseResult(
            address: address.description, hosts: attributions.map(\.host),
            ttl: Int(now.secondsRoundedUp(until: latest.answerExpiresAt)),
            names: attributions.map {
                ReverseResult.Name(
                    host: $0.host, ttl: Int(now.secondsRoundedUp(until: $0.answerExpiresAt)),
                    rememberedFor: Int(now.secondsRoundedUp(until: $0.forgetAt)))
            })
    }

    // MARK: forget

    /// Addresses `uid`'s memory holds.
    public func rememberedAddressCount(uid: UInt32) -> Int { owners.count(uid: uid) }

    /// `forget`: the caller's own memory only, so any user may call it; another user's memory of
    /// the same address stays.
    public func forget(_ params: ForgetParams, uid: UInt32) throws(RPCError) -> ForgetResult {
        switch params.target {
        case .address(let text):
            guard let address = IPAddress(text) else {
                throw .invalidParams(field: "address", "\(RPCError.quoted(text)) is not an IPv4 or IPv6 literal")
            }
            return ForgetResult(forgotten: owners.forget(uid: uid, address: address))
        case .all:
            return ForgetResult(forgotten: owners.forgetAll(uid: uid))
        }
    }

    // MARK: flushCache

    /// `flushCache`: the cache is shared by every user, so only root and the daemon's own user
    /// may empty it. Every uid's memory of the flushed names goes with it: an address two names
    /// were handed out for (a load balancer) stops being ambiguous once one is flushed.
    public func flushCache(_ params: FlushCacheParams, uid: UInt32) throws(RPCError) -> FlushCacheResult {
        guard uid == 0 || uid == settings.daemonUID else {
            throw .permissionDenied("only root or the daemon's user may flush the shared cache")
        }
        let host = try params.host.map { (h) throws(RPCError) in try canonicalName(h) }
        if let host { owners.forget(host: host) } else { owners.removeAll() }
        return FlushCacheResult(flushed: cache.flush(host: host))
    }
}
