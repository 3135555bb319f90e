/// One cookie: the one record shape that `listCookies` shows, the jar holds and the store keeps
/// (the fields of RFC 6265bis section 5.7, plus `partitioned`).
///
/// Times are Unix seconds. `creationIndex` and `lastAccess` are the jar's bookkeeping (the order
/// of cookies created in the same second, and eviction order), kept by the store so that both
/// survive a restart; the wire does not carry them (a cookie read from an answer has index 0 and
/// was last accessed when created).
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

    /// A cookie; `lastAccess` defaults to `created`. Inlinable, as the jar builds one per Set-Cookie.
    @inlinable
    public init(
        name: String, value: String, domain: String, hostOnly: Bool, path: String, expires: Int64?,
        secure: Bool, httpOnly: Bool, sameSite: CookieSameSite, partitioned: Bool,
        created: Int64, creationIndex: UInt64 = 0, lastAccess: Int64? = nil
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
        self.lastAccess = lastAccess ?? created
    }

    /// The identity a new cookie replaces (name, domain, path; host-only is not part of it).
    @inlinable
    public var key: CookieKey { CookieKey(domain: domain, path: path, name: name) }

    /// RFC 6265bis 5.7: a cookie is expired once its expiry date is not in the future.
    @inlinable
    public func isExpired(at now: Int64) -> Bool {
        guard let expires else { return false }
        return expires <= now
    }
}

extension Cookie: DescribedRecord {
    public static let blank = Cookie(
        name: "", value: "", domain: "", hostOnly: false, path: "", expires: nil, secure: false, httpOnly: false,
        sameSite: .default, partitioned: false, created: 0)

    /// The cookie as `listCookies` shows it: every field but the jar's bookkeeping (creationIndex,
    /// lastAccess). A reader needs the name, value, domain and path; the others read as their
    /// defaults when absent or of another type (a sameSite this version does not know: `default`).
    public static let fields: [ResultField<Cookie>] = [
        .string("name", \.name),
        .string("value", \.value),
        .string("domain", \.domain),
        .boolean("hostOnly", \.hostOnly, absent: false),
        .string("path", \.path),
        .integer("expires", \.expires, nil: .null),
        .boolean("secure", \.secure, absent: false),
        .boolean("httpOnly", \.httpOnly, absent: false),
        .string("sameSite", \.sameSite, unknown: .default),
        .boolean("partitioned", \.partitioned, absent: false),
        .integer("created", \.created, absent: 0),
    ]

    /// The table's reading; a cookie read from an answer was last accessed when created.
    public init?(json: JSON) {
        guard let cookie = Self.described(json) else { return nil }
        self = cookie
        lastAccess = created
    }
}

/// The same-site-flag (RFC 6265bis 5.6.7): `default` when the attribute is absent or not
/// one of the three known values. The raw values are the wire's.
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

    @inlinable
    public init(domain: String, path: String, name: String) {
        self.domain = domain
        self.path = path
        self.name = name
    }

    /// Octet equality (RFC 6265bis compares octets). Over contiguous bytes: `utf8.elementsEqual`
    /// walked string indices, and was a seventh of a set's loop time.
    @inlinable
    public static func == (lhs: CookieKey, rhs: CookieKey) -> Bool {
        lhs.name.hasSameBytes(as: rhs.name) && lhs.domain.hasSameBytes(as: rhs.domain)
            && lhs.path.hasSameBytes(as: rhs.path)
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        Self.combine(domain, into: &hasher)
        Self.combine(path, into: &hasher)
        Self.combine(name, into: &hasher)
    }

    /// A part's bytes, then 0xFF, never a UTF-8 byte, so the parts cannot run into each other.
    @usableFromInline
    static func combine(_ part: String, into hasher: inout Hasher) {
        part.withUTF8Bytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)
    }
}
