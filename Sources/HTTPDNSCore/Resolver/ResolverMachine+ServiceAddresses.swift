extension ResolverMachine {
    /// The endpoint of candidate `index` on its current service address, and that address; nil
    /// when the upstream has one address (its URL as configured).
    mutating func serviceEndpoint(_ index: Int, now: MonotonicInstant) -> (UpstreamEndpoint, String?) {
        let endpoint = endpoint(index)
        guard index >= 0, let address = serviceAddresses.address(for: endpoint, now: now) else {
            return (endpoint, nil)
        }
        return (self.endpoint(index, at: address), address)
    }

    /// The endpoint of candidate `index` with its URL on `address` (nil: as configured).
    func endpoint(_ index: Int, at address: String?) -> UpstreamEndpoint {
        var endpoint = endpoint(index)
        if let address, let url = endpoint.url, let moved = ServiceURL.replacingHost(of: url, with: address) {
            endpoint.url = moved
        }
        return endpoint
    }

    /// The service at `address` answered a query of upstream `index`.
    mutating func serviceAnswered(_ index: Int, address: String?, now: MonotonicInstant) {
        guard index >= 0, address != nil else { return }
        serviceAddresses.succeeded(settings.upstreams[index], address: address, now: now)
    }

    /// A failure the resolver counts against upstream `index` (never a name's own): it counts
    /// against the service address too when it is the address's (`isServiceAddressLevel`).
    mutating func serviceFailed(_ index: Int, address: String?, _ error: UpstreamError, now: MonotonicInstant) {
        guard index >= 0, address != nil, error.isServiceAddressLevel else { return }
        serviceAddresses.failed(settings.upstreams[index], address: address, error: error.description, now: now)
    }

    /// A query of upstream `index` used its whole share at `address`. While the upstream has
    /// answered something within `probeRecencySeconds`, only a probe can say whether the time-out
    /// was the name's (`probeIfDoubtful`); an upstream that answered nobody that long serves no
    /// one whose queries a move could disturb, so the time-out counts against the address.
    mutating func serviceTimedOut(_ index: Int, address: String?, now: MonotonicInstant) {
        guard index >= 0, address != nil else { return }
        if let recent = lastAnswered[index]?.latest, recent.at.advanced(bySeconds: Self.probeRecencySeconds) >= now {
            return
        }
        serviceAddresses.failed(
            settings.upstreams[index], address: address, error: UpstreamError(.timeout).description, now: now)
    }
}

extension UpstreamError {
    /// Whether the failure belongs to the service address asked, so another address of the same
    /// service may do better: no connection, a time-out, a server error, an answer that is not
    /// the service's. An error the service answered on purpose (its error codes, a 4xx) would be
    /// the same at every address of the account, and a name's own failure is no address's.
    public var isServiceAddressLevel: Bool {
        switch code {
        case .transport, .timeout, .malformed, .truncated, .responseTooLarge: return true
        case .httpStatus(let status): return status >= 500
        case .serviceError, .dnsStatus, .unusableChain: return false
        }
    }
}
