import HTTPDNSProtocol

// The one seam between the jar's own types and the wire shapes of HTTPDNSProtocol: the jar
// keeps what storage and retrieval need (creation order, last access, typed reasons), the
// wire keeps what the contract shows.

extension CookieRecord {
    /// A stored cookie as `listCookies` shows it.
    public init(_ cookie: Cookie) {
        self.init(
            name: cookie.name, value: cookie.value, domain: cookie.domain, hostOnly: cookie.hostOnly,
            path: cookie.path, expires: cookie.expires, secure: cookie.secure, httpOnly: cookie.httpOnly,
            sameSite: cookie.sameSite.rawValue, partitioned: cookie.partitioned, created: cookie.created)
    }
}

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
