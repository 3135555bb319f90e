import HTTPDNSProtocol

// The seam between the jar's results and the wire shapes of HTTPDNSProtocol: the jar keeps what
// storage and retrieval need (typed reasons, the host it used), the wire what the contract shows.
// A cookie itself has one shape on both sides (`Cookie`).

extension CookieHeaderResult {
    /// A retrieval as `getCookieHeader` answers it.
    public init(_ header: CookieHeader) {
        self.init(header: header.header, count: header.count)
    }
}

extension SetCookieResult {
    /// A stored response as `handleSetCookie` answers it.
    public init(_ outcome: SetCookiesOutcome) {
        self.init(
            host: outcome.host, stored: outcome.stored,
            rejected: outcome.rejected.map { Rejection(index: $0.index, reason: $0.reason.rawValue) })
    }
}
