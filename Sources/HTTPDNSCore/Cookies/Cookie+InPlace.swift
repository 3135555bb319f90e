import HTTPDNSProtocol

/// Comparisons the jar makes with a cookie where it is stored: through a pointer, since a method
/// on `pointee` (or binding it to a name) would copy the cookie and retain its four strings.
extension Cookie {
    /// `key == cookie.key`, without building a key from copies of three strings.
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
}
