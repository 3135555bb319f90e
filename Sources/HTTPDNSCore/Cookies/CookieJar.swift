import HTTPDNSProtocol

/// One user's cookie store: RFC 6265bis section 5.7 (storage, here), 5.8.3 (retrieval, in
/// `CookieJar+Retrieval`), bounded size with LRU eviction (`CookieJar+Eviction`), and the changes
/// a store must write (`CookieChangeLog`). Requests come normalized (`CookieRequest`); the cookies
/// themselves live in `CookieBuckets`.
///
/// Not thread-safe: the event-loop thread owns each jar. Time is always passed in (`now`,
/// Unix seconds), so tests control the clock.
public final class CookieJar {
    /// 6265bis 5.6.1/5.6.2: cookies live at most 400 days from the moment they are set.
    public static let maxLifetimeSeconds: Int64 = 400 * 86_400

    public let rules: any DomainRules
    public var limits: CookieJarLimits

    var buckets: CookieBuckets
    var headerMemory = CookieHeaderMemory()
    var changeLog = CookieChangeLog()
    /// Off only in the test that checks remembered headers against headers built afresh.
    var testsOnly_remembersHeaders = true
    private var nextCreationIndex: UInt64 = 1

    /// Number of cookies in the jar.
    public var count: Int { buckets.count }

    public init(rules: any DomainRules, limits: CookieJarLimits = CookieJarLimits()) {
        self.rules = rules
        self.limits = limits
        buckets = CookieBuckets(rules: rules)
    }

    // MARK: - Storage (RFC 6265bis 5.7)

    /// Stores the cookies of one response (`setCookieHeaders`: each `Set-Cookie` value, without
    /// the header name) received for `request`.
    public func setCookies(_ setCookieHeaders: [String], for request: CookieRequest, now: Int64) -> SetCookiesOutcome {
        var outcome = SetCookiesOutcome(host: request.host)
        var defaultPath = ResponseDefaultPath(requestPath: request.url.path)
        for (index, header) in setCookieHeaders.enumerated() {
            switch receive(header, request: request, defaultPath: &defaultPath, now: now) {
            case .stored: outcome.stored += 1
            case .deletedExisting: outcome.deleted += 1
            case .expiredOnArrival: break
            case .rejected(let reason): outcome.rejected.append(RejectedCookie(index: index, reason: reason))
            }
        }
        return outcome
    }

    enum ReceiveResult: Equatable {
        case stored
        /// An already expired cookie that removed the stored cookie it names.
        case deletedExisting
        /// An already expired cookie that named no stored cookie.
        case expiredOnArrival
        case rejected(CookieRejection)
    }

    func receive(_ header: String, request: CookieRequest, defaultPath: inout ResponseDefaultPath, now: Int64)
        -> ReceiveResult
    {
        let parsed: ParsedSetCookie
        switch SetCookieParser.parse(header) {
        case .success(let value): parsed = value
        case .failure(let reason): return .rejected(reason)
        }
        switch buildCookie(parsed, request: request, defaultPath: &defaultPath, now: now) {
        case .failure(let reason): return .rejected(reason)
        case .success(let cookie): return store(cookie, now: now)
        }
    }

    /// Steps 2-21 of the storage model: everything that decides whether and how the cookie
    /// is stored, without touching the store except to look for Secure cookies (step 16).
    func buildCookie(
        _ parsed: ParsedSetCookie, request: CookieRequest, defaultPath: inout ResponseDefaultPath, now: Int64
    ) -> Result<Cookie, CookieRejection> {
        // Step 2: a cookie needs a name or a value.
        if parsed.name.isEmpty && parsed.value.isEmpty { return .failure(.syntax) }
        // A nameless cookie must not look like a prefixed one (httpwg/http-extensions #2251).
        if parsed.name.isEmpty,
            CookieMatching.hasPrefixIgnoringASCIICase(parsed.value, "__secure-")
                || CookieMatching.hasPrefixIgnoringASCIICase(parsed.value, "__host-")
        {
            return .failure(.prefix)
        }

        // Step 6: Max-Age wins over Expires; both capped at 400 days.
        var expires: Int64?
        if let maxAge = parsed.maxAge {
            expires = maxAge <= 0 ? Int64.min : now + min(maxAge, Self.maxLifetimeSeconds)
        } else if let date = parsed.expires {
            expires = min(date, now + Self.maxLifetimeSeconds)
        }

        // Steps 7-10: Domain.
        var domainAttribute = parsed.domain ?? ""
        if request.domainAttributeNamesAddress(domainAttribute) { domainAttribute = "" }
        let host = request.host
        var hostOnly = true
        var domain = host
        if !domainAttribute.isEmpty {
            // We compare A-labels (IDNA through the rules), where the RFC's step 8 would
            // refuse non-ASCII outright; an invalid host name cannot match any request.
            guard let canonical = rules.canonicalHost(domainAttribute) else { return .failure(.domainMismatch) }
            var effectiveDomain = canonical
            // Step 9: public suffixes only as the request host itself (then host-only).
            if !IPLiteral.isIPLiteral(canonical), rules.isPublicSuffix(canonical) {
                guard CookieMatching.same(canonical, host) else { return .failure(.publicSuffix) }
                effectiveDomain = ""
            }
            if !effectiveDomain.isEmpty {
                guard CookieMatching.domainMatches(host, domain: effectiveDomain) else {
                    return .failure(.domainMismatch)
                }
                hostOnly = false
                domain = effectiveDomain
            }
        }

        // Step 11: Path, else the default-path. A Path= attribute is at most 1024 octets (longer
        // ones are ignored); a default-path over that is refused, as Firefox does, or a request
        // path of a megabyte would be held by every cookie of the response.
        let path: String
        if let attribute = parsed.path, attribute.utf8.first == UInt8(ascii: "/") {
            path = attribute
        } else {
            guard let fromRequest = defaultPath.value() else { return .failure(.tooLarge) }
            path = fromRequest
        }

        // Steps 12-13: Secure only from secure URLs.
        if parsed.secure && !request.url.isSecure { return .failure(.secureRequired) }

        let cookie = Cookie(
            name: parsed.name, value: parsed.value, domain: domain, hostOnly: hostOnly, path: path,
            expires: expires, secure: parsed.secure, httpOnly: parsed.httpOnly,
            sameSite: parsed.sameSite ?? .default, partitioned: parsed.partitioned,
            created: now, creationIndex: 0, lastAccess: now)

        // Step 16: a non-secure URL may not shadow a Secure cookie.
        if !cookie.secure && !request.url.isSecure && shadowsSecureCookie(cookie) {
            return .failure(.secureRequired)
        }
        // Step 18 (cross-site responses) does not apply: the contract gives handleSetCookie no
        // site, so every response counts as same-site.
        // Step 19: SameSite=None requires Secure.
        if cookie.sameSite == .none && !cookie.secure { return .failure(.sameSite) }
        // Steps 20-21: prefixes, matched case-insensitively.
        if CookieMatching.hasPrefixIgnoringASCIICase(cookie.name, "__secure-") && !cookie.secure {
            return .failure(.prefix)
        }
        if CookieMatching.hasPrefixIgnoringASCIICase(cookie.name, "__host-") {
            guard cookie.secure, cookie.hostOnly, parsed.path != nil, cookie.path == "/" else {
                return .failure(.prefix)
            }
        }
        return .success(cookie)
    }

    /// Step 16's test: a stored Secure cookie of the same name whose domain domain-matches
    /// the new one's (or the reverse) and whose path the new path path-matches.
    func shadowsSecureCookie(_ cookie: Cookie) -> Bool {
        for key in buckets.bucketKeys(relatedTo: cookie.domain) {
            for stored in buckets.storedCookies(inBucket: key) {
                let old = stored.cookie
                guard old.secure, CookieMatching.same(old.name, cookie.name) else { continue }
                let related =
                    CookieMatching.domainMatches(old.domain, domain: cookie.domain)
                    || CookieMatching.domainMatches(cookie.domain, domain: old.domain)
                if related && CookieMatching.pathMatches(cookie.path, cookiePath: old.path) { return true }
            }
        }
        return false
    }

    /// Steps 22-23 and eviction: replaces the cookie with the same key (keeping its creation
    /// time), drops a cookie that arrives expired, inserts, and enforces the limits.
    ///
    /// `keepingCreationTime` is false for a cookie from another machine's copy of a shared jar
    /// (fleet replication): its creation time already is the one the replaced cookie had there.
    func store(_ incoming: consuming Cookie, now: Int64, keepingCreationTime: Bool = true) -> ReceiveResult {
        var cookie = incoming
        let key = cookie.key
        let bucket = buckets.bucketKey(cookie.domain)
        let existing = buckets.location(of: key, inBucket: bucket)
        // Only the old cookie's creation is kept: read in place (a copy retains four strings).
        let old = existing.map { location in
            buckets.withCookie(at: location) { (created: $0.pointee.created, creationIndex: $0.pointee.creationIndex) }
        }
        if cookie.isExpired(at: now) {
            if let existing {
                buckets.remove(at: existing)
                changeLog.delete(key)
                return .deletedExisting
            }
            return .expiredOnArrival
        }
        if let old {
            if keepingCreationTime { cookie.created = old.created }
            cookie.creationIndex = old.creationIndex
        } else {
            cookie.creationIndex = nextCreationIndex
            nextCreationIndex += 1
        }
        // A replacement leaves every count as it was: within the limits it needs no look at them.
        var withinLimits = false
        var storedAsItWas = false
        if let existing {
            // A session cookie refreshed by every response: the headers remembered stay right,
            // and when it expires as before (in the same second), there is nothing to write.
            let (retrievedAsBefore, storedAsBefore) = buckets.compare(cookie, withCookieAt: existing)
            storedAsItWas = storedAsBefore
            buckets.replace(at: existing, with: cookie, retrievesAsBefore: retrievedAsBefore)
            withinLimits =
                buckets.cookieCount(inSlot: existing.slot) <= limits.maxPerDomain && buckets.count <= limits.maxTotal
        } else {
            buckets.insert(cookie, inBucket: bucket)
        }
        guard withinLimits || enforceLimits(bucket: bucket, keeping: key, now: now) else {
            _ = buckets.remove(key, inBucket: bucket)
            if old != nil { changeLog.delete(key) }
            return .rejected(.limit)
        }
        if storedAsItWas {
            changeLog.noteRefreshedAsStored()
        } else {
            changeLog.upsert(cookie)
        }
        return .stored
    }

    /// Removes every cookie of `bucket` that `shouldRemove` selects, recording the deletions (as
    /// expiry purges when `purgingExpired`); returns how many.
    @discardableResult
    func removeAll(
        inBucket bucket: String, purgingExpired: Bool = false, where shouldRemove: (Cookie) -> Bool
    ) -> Int {
        let removed = buckets.removeAll(inBucket: bucket, where: shouldRemove)
        for key in removed { changeLog.delete(key, purgingExpired: purgingExpired) }
        return removed.count
    }

    // MARK: - Deletion and listing

    /// Deletes cookies; returns how many were deleted (expired cookies are purged silently).
    /// `name`, when given, restricts the deletion to cookies of that name.
    ///
    /// - Throws: `CookieHostError` when a domain scope is not a valid host name.
    public func delete(_ scope: CookieDeletionScope, name: String? = nil, now: Int64) throws(CookieHostError) -> Int {
        purgeExpired(now: now)
        let nameMatches: (Cookie) -> Bool = { cookie in name.map { CookieMatching.same($0, cookie.name) } ?? true }
        switch scope {
        case .request(let request):
            let matched = matchingCookies(for: request, now: now, include: { nameMatches($0.pointee) }).map {
                (buckets.withCookie(at: $0.location) { $0.pointee.key }, buckets.bucketKey(at: $0.location.slot))
            }
            for (key, bucket) in matched { evict(key, bucket: bucket) }
            return matched.count
        case .domain(let text):
            let domain = try canonicalDomainFilter(text)
            var deleted = 0
            for bucket in buckets.bucketKeys(relatedTo: domain) {
                deleted += removeAll(inBucket: bucket) { cookie in
                    CookieMatching.domainMatches(cookie.domain, domain: domain) && nameMatches(cookie)
                }
            }
            return deleted
        case .all:
            var deleted = 0
            for bucket in Array(buckets.byBucket.keys) { deleted += removeAll(inBucket: bucket, where: nameMatches) }
            return deleted
        }
    }

    /// Cookies of `domain` and its subdomains (all cookies when nil), sorted by domain, then
    /// path, then creation. Expired cookies are purged first. A snapshot: the jar may change
    /// while it is read.
    ///
    /// - Throws: `CookieHostError` when `domain` is not a valid host name.
    public func list(domain: String? = nil, now: Int64) throws(CookieHostError) -> [Cookie] {
        purgeExpired(now: now)
        var cookies: [Cookie]
        if let domain {
            let filter = try canonicalDomainFilter(domain)
            cookies = buckets.bucketKeys(relatedTo: filter).flatMap { buckets.storedCookies(inBucket: $0) }.map(
                \.cookie
            ).filter {
                CookieMatching.domainMatches($0.domain, domain: filter)
            }
        } else {
            cookies = buckets.byBucket.values.flatMap { $0.map(\.cookie) }
        }
        cookies.sort { lhs, rhs in
            if !CookieMatching.same(lhs.domain, rhs.domain) {
                return lhs.domain.utf8.lexicographicallyPrecedes(rhs.domain.utf8)
            }
            if !CookieMatching.same(lhs.path, rhs.path) {
                return lhs.path.utf8.lexicographicallyPrecedes(rhs.path.utf8)
            }
            return lhs.creationIndex < rhs.creationIndex
        }
        return cookies
    }

    /// A domain filter as given by a client: a leading dot is allowed and ignored.
    private func canonicalDomainFilter(_ text: String) throws(CookieHostError) -> String {
        var trimmed = Substring(text)
        if trimmed.first == "." { trimmed = trimmed.dropFirst() }
        guard let canonical = rules.canonicalHost(String(trimmed)) else {
            throw CookieHostError(field: "domain", host: text)
        }
        return canonical
    }

    // MARK: - Persistence

    /// The changes since the last call, oldest first: what a store must apply to mirror the jar.
    public func takeChanges() -> CookieJarChanges {
        changeLog.drain()
    }

    /// Fills the jar from storage without recording changes. Expired cookies and cookies
    /// that could never have been stored (control characters) are skipped; a later
    /// duplicate of a key wins. If the limits are exceeded, the evictions are recorded.
    public func load(_ cookies: [Cookie], now: Int64) {
        let ordered = cookies.sorted { ($0.lastAccess, $0.creationIndex) < ($1.lastAccess, $1.creationIndex) }
        for cookie in ordered where !cookie.isExpired(at: now) && Self.isStorable(cookie) {
            let bucket = buckets.bucketKey(cookie.domain)
            _ = buckets.remove(cookie.key, inBucket: bucket)
            buckets.insert(cookie, inBucket: bucket)
            nextCreationIndex = max(nextCreationIndex, cookie.creationIndex + 1)
        }
        for bucket in Array(buckets.byBucket.keys) { _ = enforceLimits(bucket: bucket, keeping: nil, now: now) }
    }

    /// Whether a cookie from outside (storage, import) is safe to hold: no control
    /// characters that could end up in a header, and within the size limit.
    static func isStorable(_ cookie: Cookie) -> Bool {
        !cookie.name.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && !cookie.value.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && !cookie.path.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && cookie.name.utf8.count + cookie.value.utf8.count <= SetCookieParser.maxNameValueOctets
            && cookie.path.utf8.count <= SetCookieParser.maxAttributeValueOctets
            && !(cookie.name.isEmpty && cookie.value.isEmpty)
    }

    /// Inserts a cookie that arrived from outside the HTTP path (Netscape import), replacing
    /// the one with its key and enforcing the limits. Returns false when the limits refuse it.
    func insertImported(_ incoming: Cookie, now: Int64) -> Bool {
        var cookie = incoming
        cookie.creationIndex = 0
        return store(cookie, now: now) == .stored
    }
}

/// RFC 6265bis 5.1.4's default-path of one response's request, worked out at most once for all
/// its cookies (the request path may be a megabyte long); nil when over 1024 octets
/// (`SetCookieParser.maxAttributeValueOctets`, the longest Path= attribute kept).
struct ResponseDefaultPath {
    private let requestPath: String
    private var found: String??

    init(requestPath: String) { self.requestPath = requestPath }

    mutating func value() -> String? {
        if let found { return found }
        let path = CookieMatching.defaultPath(requestPath, maxOctets: SetCookieParser.maxAttributeValueOctets)
        found = .some(path)
        return path
    }
}

@available(*, unavailable)
extension CookieJar: Sendable {}
