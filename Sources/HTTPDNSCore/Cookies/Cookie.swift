import HTTPDNSProtocol

/// One stored cookie (the fields of RFC 6265bis section 5.7, plus `partitioned`).
///
/// Times are Unix seconds. `creationIndex` orders cookies created in the same second;
/// it is persisted so the order survives a restart.
public struct Cookie: Sendable, Equatable, Hashable {
    /// The cookie-name; empty for a nameless cookie (`Set-Cookie: value`).
    public var name: String
    public var value: String
    /// Canonical host or domain (lowercase A-labels, IP literals in canonical form).
    public var domain: String
    /// True when the cookie goes only to `domain` itself, not to its subdomains.
    public var hostOnly: Bool
    public var path: String
    /// Expiry in Unix seconds; nil for a session cookie (persistent-flag false).
    public var expires: Int64?
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: CookieSameSite
    public var partitioned: Bool
    public var created: Int64
    public var creationIndex: UInt64
    public var lastAccess: Int64

    public init(
        name: String, value: String, domain: String, hostOnly: Bool, path: String, expires: Int64?,
        secure: Bool, httpOnly: Bool, sameSite: CookieSameSite, partitioned: Bool,
        created: Int64, creationIndex: UInt64, lastAccess: Int64
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path
        self.expires = expires
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.partitioned = partitioned
        self.created = created
        self.creationIndex = creationIndex
        self.lastAccess = lastAccess
    }

    /// The identity a new cookie replaces (name, domain, path; host-only is not part of it).
    public var key: CookieKey { CookieKey(domain: domain, path: path, name: name) }

    /// `key == cookie.key`, without building a key from copies of three strings. The cookie is
    /// read where it is stored: a method on `pointee` would copy it whole.
    static func has(_ cookie: UnsafePointer<Cookie>, key: CookieKey) -> Bool {
        cookie.pointee.name.hasSameBytes(as: key.name) && cookie.pointee.domain.hasSameBytes(as: key.domain)
            && cookie.pointee.path.hasSameBytes(as: key.path)
    }

    /// Whether `new`, replacing `stored` (same key), gives every retrieval the same answer: what
    /// matching, filtering and the header read is unchanged, and it expires no earlier (a header
    /// remembered until the old expiry stays right until then).
    static func retrievesAs(_ stored: UnsafePointer<Cookie>, _ new: Cookie) -> Bool {
        let expiresNoEarlier =
            switch (stored.pointee.expires, new.expires) {
            case (_, nil): true
            case (nil, .some): false
            case (let before?, let after?): after >= before
            }
        return expiresNoEarlier && stored.pointee.hostOnly == new.hostOnly && stored.pointee.secure == new.secure
            && stored.pointee.httpOnly == new.httpOnly && stored.pointee.sameSite == new.sameSite
            && stored.pointee.value.hasSameBytes(as: new.value)
    }

    /// Whether `new`, replacing `stored` (same key), stores exactly what is stored: every column
    /// but last-access, which is bookkeeping for eviction order.
    static func isStored(_ stored: UnsafePointer<Cookie>, as new: Cookie) -> Bool {
        stored.pointee.expires == new.expires && stored.pointee.created == new.created
            && stored.pointee.creationIndex == new.creationIndex && stored.pointee.partitioned == new.partitioned
            && retrievesAs(stored, new)
    }

    /// RFC 6265bis 5.7: a cookie is expired once its expiry date is not in the future.
    public func isExpired(at now: Int64) -> Bool {
        guard let expires else { return false }
        return expires <= now
    }
}

/// The same-site-flag (RFC 6265bis 5.6.7): `default` when the attribute is absent or not
/// one of the three known values.
public enum CookieSameSite: String, Sendable, Hashable, CaseIterable {
    case strict
    case lax
    case none
    case `default`
}

/// The identity of a stored cookie. Compared and hashed as octets, as the RFC compares
/// names and paths (not by Unicode canonical equivalence, as `String ==` would).
public struct CookieKey: Sendable, Hashable {
    public var domain: String
    public var path: String
    public var name: String

    public init(domain: String, path: String, name: String) {
        self.domain = domain
        self.path = path
        self.name = name
    }

    /// Octet equality (RFC 6265bis compares octets). Over contiguous bytes: `utf8.elementsEqual`
    /// walked string indices, and was a seventh of a set's loop time.
    public static func == (lhs: CookieKey, rhs: CookieKey) -> Bool {
        lhs.name.hasSameBytes(as: rhs.name) && lhs.domain.hasSameBytes(as: rhs.domain)
            && lhs.path.hasSameBytes(as: rhs.path)
    }

    public func hash(into hasher: inout Hasher) {
        Self.combine(domain, into: &hasher)
        Self.combine(path, into: &hasher)
        Self.combine(name, into: &hasher)
    }

    /// A part's bytes, then 0xFF, never a UTF-8 byte, so the parts cannot run into each other.
    private static func combine(_ part: String, into hasher: inout Hasher) {
        part.withUTF8Bytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)
    }
}

/// One change to the jar, for a persistent store to replay.
public enum CookieChange: Sendable, Equatable {
    /// Insert or replace the cookie with this key.
    case upsert(Cookie)
    /// Remove the cookie with this key.
    case delete(CookieKey)
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

/// Limits on the jar's size (RFC 6265bis section 6.1 asks for at least 50 per domain and
/// 3000 in total; 180 per domain is what Chromium allows).
public struct CookieJarLimits: Sendable, Equatable {
    /// Cookies per registrable domain (or per host when it has none, such as an IP).
    public var maxPerDomain: Int
    /// Cookies in the whole jar.
    public var maxTotal: Int

    public init(maxPerDomain: Int = 180, maxTotal: Int = 3000) {
        self.maxPerDomain = maxPerDomain
        self.maxTotal = maxTotal
    }
}
