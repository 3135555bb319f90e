import HTTPDNSProtocol

/// One change to a jar, for a persistent store to replay.
public enum CookieChange: Sendable, Equatable {
    /// Insert or replace the cookie with this key.
    case upsert(Cookie)
    /// Remove the cookie with this key.
    case delete(CookieKey)

    /// The identity of the cookie it changes.
    public var key: CookieKey {
        switch self {
        case .upsert(let cookie): return cookie.key
        case .delete(let key): return key
        }
    }
}

/// The changes `CookieJar.takeChanges()` took out of a jar.
public struct CookieJarChanges: Sendable, Equatable {
    /// Oldest first.
    public var changes: [CookieChange]
    /// Positions in `changes` of the deletions that only purged an expired cookie: every copy of a
    /// cookie expires by itself, so those are not changes to replicate.
    public var expiryPurges: Set<Int>
    /// Some cookie was set again exactly as stored (last-access aside): not a change, but what it
    /// was set to may not be written yet, so the request is answered only once it is.
    public var refreshedAsStored: Bool

    public init(changes: [CookieChange], expiryPurges: Set<Int> = [], refreshedAsStored: Bool = false) {
        self.changes = changes
        self.expiryPurges = expiryPurges
        self.refreshedAsStored = refreshedAsStored
    }

    /// Whether the request that made these changes may be answered only once they are stored: when
    /// it changed something, and when it set a cookie again exactly as stored (nothing to write, but
    /// what it acknowledges may still be being written by the batches before it).
    public var waitForTheStore: Bool { !changes.isEmpty || refreshedAsStored }

    /// The changes a person or a site made (every one but the expiry purges).
    public var deliberate: [CookieChange] {
        changes.enumerated().filter { !expiryPurges.contains($0.offset) }.map(\.element)
    }
}

/// Why a `Set-Cookie` value was not stored. The raw values are the wire names of handleSetCookie's `rejected[].reason`.
public enum CookieRejection: String, Error, Sendable, Hashable, CaseIterable {
    /// Control characters, or an empty name and value.
    case syntax
    /// `Domain=` does not cover the request host, or is not a valid host name.
    case domainMismatch = "domain-mismatch"
    /// `Domain=` names a public suffix other than the request host itself.
    case publicSuffix = "public-suffix"
    /// `Secure` from a non-secure URL, or a non-secure URL overwriting a Secure cookie.
    case secureRequired = "secure-required"
    /// A `__Secure-` or `__Host-` cookie that does not meet its prefix's rules.
    case prefix
    /// Name plus value longer than 4096 octets.
    case tooLarge = "too-large"
    /// The jar's limits leave no room for the cookie.
    case limit
    /// `SameSite=None` without `Secure`.
    case sameSite = "samesite"
}

/// What `CookieJar.setCookies` did.
public struct SetCookiesOutcome: Sendable, Equatable {
    /// The host the cookies were stored under (after domain normalization).
    public var host: String
    /// Cookies stored (new or replacing one with the same name, domain and path).
    public var stored = 0
    /// Stored cookies removed by cookies that arrived already expired.
    public var deleted = 0
    /// Cookies not stored, with the index of their `Set-Cookie` value.
    public var rejected: [RejectedCookie] = []

    public init(host: String, stored: Int = 0, deleted: Int = 0, rejected: [RejectedCookie] = []) {
        self.host = host
        self.stored = stored
        self.deleted = deleted
        self.rejected = rejected
    }
}

/// One refused `Set-Cookie` value.
public struct RejectedCookie: Sendable, Equatable {
    /// Its index in the `setCookie` array.
    public var index: Int
    public var reason: CookieRejection

    public init(index: Int, reason: CookieRejection) {
        self.index = index
        self.reason = reason
    }
}

/// What `CookieJar.cookieHeader` returns.
public struct CookieHeader: Sendable, Equatable {
    /// The `Cookie` header value; empty when no cookie matches.
    public var header: String
    /// Number of cookies in `header`.
    public var count: Int
    /// The host the cookies were looked up under (after domain normalization).
    public var host: String
}

/// Which cookies `CookieJar.delete` removes.
public enum CookieDeletionScope: Sendable {
    /// Exactly the cookies a retrieval for the request would return, ignoring SameSite and `forScript`.
    case request(CookieRequest)
    /// The cookies of a domain (as a client wrote it) and its subdomains.
    case domain(String)
    /// Every cookie.
    case all
}

/// A host the jar cannot use: the URL's host, the normalized host or a domain filter is not
/// a valid host name. The server answers -32602 naming `field`.
public struct CookieHostError: Error, Sendable, Equatable {
    /// The request member at fault: `url`, `host` or `domain`.
    public let field: String
    /// The offending text.
    public let host: String

    public init(field: String, host: String) {
        self.field = field
        self.host = host
    }
}
