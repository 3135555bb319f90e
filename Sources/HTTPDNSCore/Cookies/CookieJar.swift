import HTTPDNSProtocol

/// One user's cookie store: RFC 6265bis section 5.7 (storage) and 5.8.3 (retrieval), plus
/// the domain normalization of httpdnsd-rpc(7) (JARS AND ADDRESS MEMORY) and bounded size with LRU eviction.
///
/// Not thread-safe: the event-loop thread owns each jar. Time is always passed in (`now`,
/// Unix seconds), so tests control the clock.
public final class CookieJar {
    /// 6265bis 5.6.1/5.6.2: cookies live at most 400 days from the moment they are set.
    public static let maxLifetimeSeconds: Int64 = 400 * 86_400

    public let rules: any DomainRules
    public var limits: CookieJarLimits

    /// Cookies by bucket key: the registrable domain of the cookie's domain, or the domain
    /// itself when it has none (IP literals, public suffixes set host-only). A bucket key is
    /// always a suffix of every domain in it, so a lookup for a host only has to visit the
    /// buckets named by the host's own suffixes. Keys are added only by `insert` and removed
    /// only by `removeCookie(at:)` and `removeAll(inBucket:)`, which clear `candidateCache`: its
    /// places would be stale (using one traps).
    private var buckets: [String: [StoredCookie]] = [:]
    /// `candidateBuckets` per host, as places in `buckets`: valid while the set of bucket keys
    /// stays the same (a retrieval then costs one lookup, not one per parent domain and then one
    /// per bucket). Bounded; cleared whenever a bucket appears or goes, which is also when the
    /// places would change.
    private var candidateCache: [String: [BucketSlot]] = [:]
    private static let candidateCacheLimit = 4096
    /// `bucketKey` per domain: the suffix list is not consulted again for a domain the jar has
    /// stored under (a libpsl lookup was a tenth of a set). The list does not change while the
    /// daemon runs; bounded as `candidateCache` is.
    private var bucketKeyCache: [String: String] = [:]
    /// Headers already built, per request shape, each for the `version` it was built at:
    /// a client asking for the same URL again is answered without matching, sorting or
    /// serializing (three quarters of a retrieval). Bounded as `candidateCache` is, in entries
    /// and in the size of a header it keeps.
    private var headerMemo: [HeaderMemoKey: HeaderMemo] = [:]
    private static let headerMemoLimit = 256
    private static let headerMemoMaxBytes = 4096
    /// Off only in the test that checks remembered headers against headers built afresh.
    var remembersHeaders = true
    /// Moved on by every change to the stored cookies: each insert, replacement and removal
    /// (`insert`, `store`, `removeCookie(at:)`, `removeAll(inBucket:)`, the only places that write
    /// `buckets`), so a header remembered at an older version is never served.
    private var version: UInt64 = 0
    /// Number of cookies in all buckets.
    public private(set) var count = 0
    private var nextCreationIndex: UInt64 = 1
    /// A counter bumped on every set and every retrieval: exact LRU order even within one second.
    private var accessClock: UInt64 = 0
    private var pendingChanges: [CookieChange] = []
    /// A cookie was set again exactly as stored since the last drain (last-access aside): no
    /// change to write, but its answer must wait for the changes still being written.
    private var refreshedAsStored = false
    /// Which of `pendingChanges` only purged an expired cookie (positions in it).
    private var pendingPurges = Set<Int>()

    /// A bucket's place in `buckets`: valid while no bucket is added or removed.
    typealias BucketSlot = Dictionary<String, [StoredCookie]>.Index

    struct StoredCookie {
        var cookie: Cookie
        var accessOrder: UInt64
    }

    public init(rules: any DomainRules, limits: CookieJarLimits = CookieJarLimits()) {
        self.rules = rules
        self.limits = limits
    }

    // MARK: - Requests and domain normalization

    /// The request as the jar sees it: the URL with a canonical host (the normalized host
    /// substituted for an IP literal when one is given) and the IP literal, if any.
    struct EffectiveRequest {
        var url: RequestURL
        var ipLiteral: String?
        var host: String { url.host }
    }

    func effectiveRequest(_ url: RequestURL, normalizedHost: String?) throws(CookieHostError) -> EffectiveRequest {
        if url.isIPLiteral {
            guard let normalizedHost else { return EffectiveRequest(url: url, ipLiteral: url.host) }
            guard let canonical = rules.canonicalHost(normalizedHost) else {
                throw CookieHostError(field: "host", host: normalizedHost)
            }
            return EffectiveRequest(url: url.replacingHost(canonical), ipLiteral: url.host)
        }
        guard let canonical = rules.canonicalHost(url.host) else { throw CookieHostError(field: "url", host: url.host) }
        return EffectiveRequest(url: url.replacingHost(canonical), ipLiteral: nil)
    }

    /// The bucket key of a canonical domain.
    func bucketKey(_ domain: String) -> String {
        if let cached = bucketKeyCache[domain] { return cached }
        let key = rules.registrableDomain(domain) ?? domain
        if bucketKeyCache.count >= Self.candidateCacheLimit { bucketKeyCache.removeAll() }
        bucketKeyCache[domain] = key
        return key
    }

    // MARK: - Storage (RFC 6265bis 5.7)

    /// Stores the cookies of one response.
    ///
    /// - Parameters:
    ///   - setCookieHeaders: each `Set-Cookie` value, without the header name.
    ///   - url: the URL the response came from.
    ///   - normalizedHost: when `url` holds an IP literal, the host name to store under.
    /// - Throws: `CookieHostError` when the URL's host or `normalizedHost` is not a valid host.
    public func setCookies(
        _ setCookieHeaders: [String], url: RequestURL, normalizedHost: String?, now: Int64
    ) throws(CookieHostError) -> SetCookiesOutcome {
        let request = try effectiveRequest(url, normalizedHost: normalizedHost)
        var outcome = SetCookiesOutcome(host: request.host)
        for (index, header) in setCookieHeaders.enumerated() {
            switch receive(header, request: request, now: now) {
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

    func receive(_ header: String, request: EffectiveRequest, now: Int64) -> ReceiveResult {
        let parsed: ParsedSetCookie
        switch SetCookieParser.parse(header) {
        case .success(let value): parsed = value
        case .failure(let reason): return .rejected(reason)
        }
        switch buildCookie(parsed, request: request, now: now) {
        case .failure(let reason): return .rejected(reason)
        case .success(let cookie): return store(cookie, now: now)
        }
    }

    /// Steps 2-21 of the storage model: everything that decides whether and how the cookie
    /// is stored, without touching the store except to look for Secure cookies (step 16).
    func buildCookie(
        _ parsed: ParsedSetCookie, request: EffectiveRequest, now: Int64
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
        if !domainAttribute.isEmpty, let ip = request.ipLiteral, IPLiteral.canonical(domainAttribute) == ip {
            // Domain normalization: `Domain=<the IP>` means "this host": the cookie belongs to the name the IP stands for.
            domainAttribute = ""
        }
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

        // Step 11: Path, else the default-path.
        let path: String
        if let attribute = parsed.path, attribute.utf8.first == UInt8(ascii: "/") {
            path = attribute
        } else {
            path = CookieMatching.defaultPath(request.url.path)
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
        for key in bucketKeys(relatedTo: cookie.domain) {
            for stored in buckets[key] ?? [] {
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
    func store(_ incoming: Cookie, now: Int64, keepingCreationTime: Bool = true) -> ReceiveResult {
        var cookie = incoming
        let key = cookie.key
        let bucket = bucketKey(cookie.domain)
        let existing = location(of: key, inBucket: bucket)
        // Only the old cookie's creation is kept: read in place (a copy retains four strings).
        let old = existing.map { location in
            buckets.values[location.slot].withUnsafeBufferPointer { cookies in
                (
                    created: cookies[location.index].cookie.created,
                    creationIndex: cookies[location.index].cookie.creationIndex
                )
            }
        }
        if cookie.isExpired(at: now) {
            if let existing {
                removeCookie(at: existing)
                pendingChanges.append(.delete(key))
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
            // A replacement takes the old one's place: no bucket shifts, empties or reappears
            // (which would clear `candidateCache`). Order in a bucket means nothing: retrieval
            // sorts, and eviction goes by `accessOrder`.
            accessClock += 1
            // A session cookie refreshed by every response: the headers remembered stay right,
            // and when it expires as before (in the same second), there is nothing to write.
            let (retrievedAsBefore, storedAsBefore) = buckets.values[existing.slot].withUnsafeBufferPointer {
                cookies in
                let stored = (cookies.baseAddress! + existing.index).pointer(to: \.cookie)!
                return (Cookie.retrievesAs(stored, cookie), Cookie.isStored(stored, as: cookie))
            }
            if !retrievedAsBefore { version &+= 1 }
            storedAsItWas = storedAsBefore
            buckets.values[existing.slot][existing.index] = StoredCookie(cookie: cookie, accessOrder: accessClock)
            withinLimits = buckets.values[existing.slot].count <= limits.maxPerDomain && count <= limits.maxTotal
        } else {
            insert(cookie, bucket: bucket)
        }
        guard withinLimits || enforceLimits(bucket: bucket, keeping: key, now: now) else {
            _ = remove(key, inBucket: bucket)
            if old != nil { pendingChanges.append(.delete(key)) }
            return .rejected(.limit)
        }
        if storedAsItWas {
            refreshedAsStored = true
        } else {
            pendingChanges.append(.upsert(cookie))
        }
        return .stored
    }

    private func insert(_ cookie: Cookie, bucket: String) {
        accessClock += 1
        version &+= 1
        if buckets[bucket] == nil { candidateCache.removeAll() }
        buckets[bucket, default: []].append(StoredCookie(cookie: cookie, accessOrder: accessClock))
        count += 1
    }

    /// Removes the cookie with `key` from `bucket`, without recording a change.
    private func remove(_ key: CookieKey, inBucket bucket: String) -> Cookie? {
        guard let location = location(of: key, inBucket: bucket) else { return nil }
        return removeCookie(at: location)
    }

    /// Where the cookie with `key` is in `bucket`: valid until the jar changes.
    private func location(of key: CookieKey, inBucket bucket: String) -> (slot: BucketSlot, index: Int)? {
        guard let slot = buckets.index(forKey: bucket) else { return nil }
        // Through a pointer: `firstIndex(where:)` hands each element over as a copy.
        let index = buckets.values[slot].withUnsafeBufferPointer { cookies in
            cookies.indices.first { Cookie.has(cookies.baseAddress!.advanced(by: $0).pointer(to: \.cookie)!, key: key) }
        }
        return index.map { (slot, $0) }
    }

    /// Removes the cookie at `location`, and its bucket once empty, without recording a change.
    @discardableResult
    private func removeCookie(at location: (slot: BucketSlot, index: Int)) -> Cookie {
        version &+= 1
        let removed = buckets.values[location.slot].remove(at: location.index).cookie
        if buckets.values[location.slot].isEmpty {
            buckets.remove(at: location.slot)
            candidateCache.removeAll()
        }
        count -= 1
        return removed
    }

    /// Removes every cookie of `bucket` that `shouldRemove` selects, recording deletions (as
    /// expiry purges when `purgingExpired`).
    @discardableResult
    private func removeAll(
        inBucket bucket: String, purgingExpired: Bool = false, where shouldRemove: (Cookie) -> Bool
    ) -> Int {
        guard let slot = buckets.index(forKey: bucket) else { return 0 }
        // Looked at before changed: most calls remove nothing, and then the bucket is not copied.
        guard buckets.values[slot].contains(where: { shouldRemove($0.cookie) }) else { return 0 }
        version &+= 1
        let before = buckets.values[slot].count
        buckets.values[slot].removeAll { stored in
            guard shouldRemove(stored.cookie) else { return false }
            if purgingExpired { pendingPurges.insert(pendingChanges.count) }
            pendingChanges.append(.delete(stored.cookie.key))
            return true
        }
        let removed = before - buckets.values[slot].count
        if buckets.values[slot].isEmpty {
            buckets.remove(at: slot)
            candidateCache.removeAll()
        }
        count -= removed
        return removed
    }

    // MARK: - Limits and eviction (RFC 6265bis 5.7, "remove excess cookies")

    /// Brings `bucket` and the jar back within the limits, never evicting `keeping`.
    /// Returns false when that is impossible without evicting `keeping`.
    private func enforceLimits(bucket: String, keeping: CookieKey?, now: Int64) -> Bool {
        if (buckets[bucket]?.count ?? 0) > limits.maxPerDomain {
            removeAll(inBucket: bucket, purgingExpired: true) { $0.isExpired(at: now) }
            while (buckets[bucket]?.count ?? 0) > limits.maxPerDomain {
                // Priority: non-secure cookies of the over-full domain, then any of them;
                // the least recently accessed first.
                guard let victim = leastRecentlyUsed(in: [bucket], excluding: keeping, preferNonSecure: true) else {
                    return false
                }
                evict(victim, bucket: bucket)
            }
        }
        if count > limits.maxTotal {
            purgeExpired(now: now)
            while count > limits.maxTotal {
                guard let (victim, victimBucket) = leastRecentlyUsedInJar(excluding: keeping) else { return false }
                evict(victim, bucket: victimBucket)
            }
        }
        return true
    }

    private func evict(_ key: CookieKey, bucket: String) {
        if remove(key, inBucket: bucket) != nil { pendingChanges.append(.delete(key)) }
    }

    private func leastRecentlyUsed(in keys: [String], excluding: CookieKey?, preferNonSecure: Bool) -> CookieKey? {
        var best: StoredCookie?
        for key in keys {
            for stored in buckets[key] ?? [] where stored.cookie.key != excluding {
                guard let current = best else {
                    best = stored
                    continue
                }
                if preferNonSecure && current.cookie.secure != stored.cookie.secure {
                    if current.cookie.secure { best = stored }
                } else if stored.accessOrder < current.accessOrder {
                    best = stored
                }
            }
        }
        return best?.cookie.key
    }

    private func leastRecentlyUsedInJar(excluding: CookieKey?) -> (CookieKey, String)? {
        var best: (order: UInt64, key: CookieKey, bucket: String)?
        for (bucket, cookies) in buckets {
            for stored in cookies where stored.cookie.key != excluding {
                if best == nil || stored.accessOrder < best!.order {
                    best = (stored.accessOrder, stored.cookie.key, bucket)
                }
            }
        }
        return best.map { ($0.key, $0.bucket) }
    }

    /// Removes every expired cookie; returns how many.
    @discardableResult
    public func purgeExpired(now: Int64) -> Int {
        var removed = 0
        for bucket in Array(buckets.keys) {
            removed += removeAll(inBucket: bucket, purgingExpired: true) { $0.isExpired(at: now) }
        }
        return removed
    }

    // MARK: - Retrieval (RFC 6265bis 5.8.3)

    /// The `Cookie` header value for a request.
    ///
    /// - Parameters:
    ///   - forScript: a non-HTTP retrieval (`document.cookie`): HttpOnly cookies are left out.
    ///   - siteForCookies: the top-level site; nil means the request is same-site.
    ///   - topLevelNavigation: a cross-site top-level navigation with a safe method, which
    ///     receives `Lax` (and `Default`) cookies.
    public func cookieHeader(
        url: RequestURL, normalizedHost: String?, forScript: Bool = false, siteForCookies: RequestURL? = nil,
        topLevelNavigation: Bool = false, now: Int64
    ) throws(CookieHostError) -> CookieHeader {
        let request = try effectiveRequest(url, normalizedHost: normalizedHost)
        let crossSite = siteForCookies.map { isCrossSite(request: request.url, site: $0) } ?? false
        // Same-site requests depend only on these (and on time, which only expires cookies).
        let memoKey =
            crossSite || !remembersHeaders
            ? nil
            : HeaderMemoKey(
                host: request.host, path: request.url.cookiePath, isSecure: request.url.isSecure, forScript: forScript)
        if let memoKey, let memo = headerMemo[memoKey], memo.version == version, now < memo.validUntil {
            touch(memo.selected, now: now)
            return CookieHeader(header: memo.header, count: memo.selected.count, host: request.host)
        }
        var selected = matchingCookies(for: request, now: now) { cookie in
            if cookie.pointee.httpOnly && forScript { return false }
            let sameSite = cookie.pointee.sameSite
            if crossSite && sameSite != .none {
                // Only HTTP retrievals of Lax/Default cookies for top-level navigations.
                return !forScript && (sameSite == .lax || sameSite == .default) && topLevelNavigation
            }
            return true
        }
        // Step 2: longer paths first, then earlier creation.
        selected.sort { lhs, rhs in
            if lhs.pathLength != rhs.pathLength { return lhs.pathLength > rhs.pathLength }
            return lhs.creationIndex < rhs.creationIndex
        }
        touch(selected, now: now)
        let header = serializedHeader(selected)
        // CTLs are refused at every entry point (parse, load, import), so no CR or LF can
        // reach a request header.
        assert(!header.utf8.contains(where: SetCookieParser.isForbiddenControl), "control character in Cookie header")
        if let memoKey, header.utf8.count <= Self.headerMemoMaxBytes {
            if headerMemo.count >= Self.headerMemoLimit { headerMemo.removeAll() }
            headerMemo[memoKey] = HeaderMemo(
                version: version, validUntil: selected.lazy.compactMap(\.expires).min() ?? Int64.max, header: header,
                selected: selected)
        }
        return CookieHeader(header: header, count: selected.count, host: request.host)
    }

    /// Step 3: the last-access-time of the cookies sent.
    private func touch(_ selected: [CookieLocation], now: Int64) {
        for location in selected {
            accessClock += 1
            let order = accessClock
            buckets.values[location.slot].withUnsafeMutableBufferPointer { cookies in
                cookies[location.index].cookie.lastAccess = now
                cookies[location.index].accessOrder = order
            }
        }
    }

    private struct HeaderMemoKey: Hashable {
        var host: String
        var path: String
        var isSecure: Bool
        var forScript: Bool
    }

    /// A header as built at `version`; its places in `buckets` hold while the version does. Good
    /// until the first of its cookies expires.
    private struct HeaderMemo {
        var version: UInt64
        var validUntil: Int64
        var header: String
        var selected: [CookieLocation]
    }

    /// Schemeful same-site: the registrable domains (or hosts, when there is none) and the
    /// secure-ness of the schemes must both agree.
    func isCrossSite(request: RequestURL, site: RequestURL) -> Bool {
        let siteHost = rules.canonicalHost(site.host) ?? site.host
        if site.isSecure != request.isSecure { return true }
        return !CookieMatching.same(bucketKey(siteHost), bucketKey(request.host))
    }

    /// Step 4: the cookies' `name=value` pairs joined by "; ", a nameless cookie being its value
    /// alone. Measured first, then written into one allocation: appending to a `String` piece by
    /// piece was a sixth of a retrieval.
    private func serializedHeader(_ selected: [CookieLocation]) -> String {
        var length = 0
        for location in selected {
            // "; " and "=" included: at most three bytes more than the header needs.
            length += withCookie(at: location) { $0.pointee.name.utf8.count + $0.pointee.value.utf8.count + 3 }
        }
        return String(unsafeUninitializedCapacity: length) { out in
            guard let target = out.baseAddress else { return 0 }
            var written = 0
            for (position, location) in selected.enumerated() {
                withCookie(at: location) { cookie in
                    if position > 0 {
                        target[written] = UInt8(ascii: ";")
                        target[written + 1] = UInt8(ascii: " ")
                        written += 2
                    }
                    if !cookie.pointee.name.isEmpty {
                        written += Self.copyUTF8(of: cookie.pointee.name, to: target + written)
                        target[written] = UInt8(ascii: "=")
                        written += 1
                    }
                    written += Self.copyUTF8(of: cookie.pointee.value, to: target + written)
                }
            }
            return written
        }
    }

    /// Copies `text`'s UTF-8 to `target`; returns how many bytes. Not generic: the generic
    /// `withUTF8Bytes` per piece was most of the header's cost.
    private static func copyUTF8(of text: String, to target: UnsafeMutablePointer<UInt8>) -> Int {
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes in
            if let source = bytes.baseAddress { target.initialize(from: source, count: bytes.count) }
            return bytes.count
        }
        if let copied { return copied }
        var count = 0
        for byte in text.utf8 {
            target[count] = byte
            count += 1
        }
        return count
    }

    /// The cookie at `location`, read where it is stored (a copy would retain its strings).
    private func withCookie<R>(at location: CookieLocation, _ body: (UnsafePointer<Cookie>) -> R) -> R {
        buckets.values[location.slot].withUnsafeBufferPointer { cookies in
            body((cookies.baseAddress! + location.index).pointer(to: \.cookie)!)
        }
    }

    struct CookieLocation {
        /// The bucket's place in `buckets`: valid while no bucket is added or removed.
        var slot: BucketSlot
        var index: Int
        /// The cookie's sort keys (RFC 6265bis 5.8.3 step 2), so sorting needs no lookups.
        var pathLength: Int
        var creationIndex: UInt64
        /// When the cookie expires (nil: at the end of the session), which bounds a remembered header.
        var expires: Int64?
    }

    /// Step 1 of retrieval without the SameSite/HttpOnly filters (given by `include`):
    /// domain, host-only, path and Secure. Removes expired cookies it comes across.
    func matchingCookies(
        for request: EffectiveRequest, now: Int64, include: (UnsafePointer<Cookie>) -> Bool
    ) -> [CookieLocation] {
        let host = request.host
        let hostIsIP = request.url.isIPLiteral
        let candidates = candidateBuckets(forHost: host, isIPLiteral: hostIsIP)
        var result: [CookieLocation] = []
        var sawExpired = false
        let isSecure = request.url.isSecure
        // The request's host and path in place once, each cookie's strings in place where they
        // are stored: a cookie bound to a name, or passed by value, is a copy of four strings.
        host.withUTF8Bytes { host in
            request.url.cookiePath.withUTF8Bytes { path in
                for slot in candidates {
                    buckets.values[slot].withUnsafeBufferPointer { cookies in
                        guard let first = cookies.baseAddress else { return }
                        result.reserveCapacity(result.count + cookies.count)
                        for index in cookies.indices {
                            let cookie = (first + index).pointer(to: \.cookie)!
                            switch Self.match(
                                cookie, host: host, hostIsIP: hostIsIP, path: path, isSecure: isSecure, now: now)
                            {
                            case .expired:
                                sawExpired = true
                            case .no:
                                break
                            case .yes:
                                if include(cookie) {
                                    result.append(
                                        CookieLocation(
                                            slot: slot, index: index, pathLength: cookie.pointee.path.utf8.count,
                                            creationIndex: cookie.pointee.creationIndex, expires: cookie.pointee.expires
                                        ))
                                }
                            }
                        }
                    }
                }
            }
        }
        guard sawExpired else { return result }
        // Rare: purging may drop buckets (which moves the others' slots), so the keys are taken
        // before it, and the match runs again after it.
        for bucket in candidates.map({ buckets.keys[$0] }) { removeAll(inBucket: bucket) { $0.isExpired(at: now) } }
        return matchingCookies(for: request, now: now, include: include)
    }

    private enum Match { case yes, no, expired }

    /// Step 1's tests for one cookie: domain (host-only or domain-match), path and Secure.
    private static func match(
        _ cookie: UnsafePointer<Cookie>, host: UnsafeBufferPointer<UInt8>, hostIsIP: Bool,
        path: UnsafeBufferPointer<UInt8>, isSecure: Bool, now: Int64
    ) -> Match {
        if cookie.pointee.isExpired(at: now) { return .expired }
        if cookie.pointee.secure && !isSecure { return .no }
        let domainOK = cookie.pointee.domain.withUTF8Bytes { domain in
            cookie.pointee.hostOnly
                ? CookieMatching.same(host, domain)
                : CookieMatching.domainMatches(host, domain: domain, hostIsIPLiteral: hostIsIP)
        }
        guard domainOK else { return .no }
        return cookie.pointee.path.withUTF8Bytes { CookieMatching.pathMatches(path, cookiePath: $0) } ? .yes : .no
    }

    /// The buckets that can hold cookies for `host`: those keyed by the host or one of its
    /// parent domains (a bucket key is a suffix of every domain in it).
    func candidateBuckets(forHost host: String, isIPLiteral: Bool) -> [BucketSlot] {
        if isIPLiteral { return buckets.index(forKey: host).map { [$0] } ?? [] }
        if let cached = candidateCache[host] { return cached }
        let slots = findCandidateBuckets(forHost: host)
        if candidateCache.count >= Self.candidateCacheLimit { candidateCache.removeAll() }
        candidateCache[host] = slots
        return slots
    }

    private func findCandidateBuckets(forHost host: String) -> [BucketSlot] {
        var slots: [BucketSlot] = []
        var candidate = Substring(host)
        while true {
            if let slot = buckets.index(forKey: String(candidate)) { slots.append(slot) }
            guard let dot = candidate.firstIndex(of: ".") else { break }
            candidate = candidate[candidate.index(after: dot)...]
            if candidate.isEmpty { break }
        }
        return slots
    }

    /// Bucket keys that can hold a cookie whose domain domain-matches `domain` or is
    /// domain-matched by it (a scan of the keys, not of the cookies).
    func bucketKeys(relatedTo domain: String) -> [String] {
        if IPLiteral.isIPLiteral(domain) { return buckets[domain] == nil ? [] : [domain] }
        return buckets.keys.filter { key in
            CookieMatching.domainMatches(key, domain: domain) || CookieMatching.domainMatches(domain, domain: key)
        }
    }

    // MARK: - Deletion and listing

    /// Deletes cookies; returns how many were deleted (expired cookies are purged silently).
    ///
    /// - `.url`: exactly the cookies a retrieval for that URL would return, ignoring
    ///   SameSite and `forScript`.
    /// - `.domain`: cookies of that domain and its subdomains.
    /// - `.all`: every cookie.
    /// `name`, when given, restricts the deletion to cookies of that name.
    public func delete(_ scope: CookieDeletionScope, name: String? = nil, now: Int64) throws(CookieHostError) -> Int {
        purgeExpired(now: now)
        let nameMatches: (Cookie) -> Bool = { cookie in name.map { CookieMatching.same($0, cookie.name) } ?? true }
        switch scope {
        case .url(let url, let normalizedHost):
            let request = try effectiveRequest(url, normalizedHost: normalizedHost)
            let keys = matchingCookies(for: request, now: now, include: { nameMatches($0.pointee) }).map {
                (buckets.values[$0.slot][$0.index].cookie.key, buckets.keys[$0.slot])
            }
            for (key, bucket) in keys { evict(key, bucket: bucket) }
            return keys.count
        case .domain(let text):
            let domain = try canonicalDomainFilter(text)
            var deleted = 0
            for bucket in bucketKeys(relatedTo: domain) {
                deleted += removeAll(inBucket: bucket) { cookie in
                    CookieMatching.domainMatches(cookie.domain, domain: domain) && nameMatches(cookie)
                }
            }
            return deleted
        case .all:
            var deleted = 0
            for bucket in Array(buckets.keys) { deleted += removeAll(inBucket: bucket, where: nameMatches) }
            return deleted
        }
    }

    /// Cookies of `domain` and its subdomains (all cookies when nil), sorted by domain, then
    /// path, then creation. Expired cookies are purged first.
    public func list(domain: String? = nil, now: Int64) throws(CookieHostError) -> [Cookie] {
        purgeExpired(now: now)
        var cookies: [Cookie]
        if let domain {
            let filter = try canonicalDomainFilter(domain)
            cookies = bucketKeys(relatedTo: filter).flatMap { buckets[$0] ?? [] }.map(\.cookie).filter {
                CookieMatching.domainMatches($0.domain, domain: filter)
            }
        } else {
            cookies = buckets.values.flatMap { $0.map(\.cookie) }
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

    // MARK: - Persistence seam

    /// The changes since the last call, oldest first: what a store must apply to mirror the
    /// jar. Last-access updates from retrievals are not included (they ride along with the
    /// cookie's next upsert).
    public func drainChanges() -> [CookieChange] {
        drainChangesMarkingPurges().changes
    }

    /// `drainChanges()`, telling apart the deletions that only purged an expired cookie: every
    /// copy of a cookie expires by itself, so those are not changes to replicate.
    public func drainChangesMarkingPurges() -> CookieJarChanges {
        defer {
            pendingChanges.removeAll(keepingCapacity: true)
            pendingPurges.removeAll(keepingCapacity: true)
            refreshedAsStored = false
        }
        return CookieJarChanges(
            changes: pendingChanges, expiryPurges: pendingPurges, refreshedAsStored: refreshedAsStored)
    }

    // MARK: - Replication seam

    /// The stored cookie with `key`, if any (expired or not).
    public func cookie(for key: CookieKey) -> Cookie? {
        location(of: key, inBucket: bucketKey(key.domain)).map { buckets.values[$0.slot][$0.index].cookie }
    }

    /// Stores a cookie that another machine's copy of a shared jar holds (fleet replication),
    /// as it is there (its creation time included), and enforces this jar's limits. Returns the
    /// changes for the store (the cookie, and any eviction the limits made) instead of
    /// recording them as this jar's own: they are not local changes to replicate again.
    public func applyRemote(_ cookie: Cookie, now: Int64) -> [CookieChange] {
        takingChanges { _ = store(cookie, now: now, keepingCreationTime: false) }
    }

    /// Removes the cookie with `key` because the fleet deleted it; returns the change for the
    /// store (none when the jar did not hold it).
    public func applyRemoteRemoval(_ key: CookieKey) -> [CookieChange] {
        takingChanges {
            if remove(key, inBucket: bucketKey(key.domain)) != nil { pendingChanges.append(.delete(key)) }
        }
    }

    /// Runs `body` and takes the changes it recorded out of the pending ones.
    private func takingChanges(_ body: () -> Void) -> [CookieChange] {
        let mark = pendingChanges.count
        let refreshedBefore = refreshedAsStored
        body()
        // What `body` set again as stored is the caller's to wait for, not the next request's.
        refreshedAsStored = refreshedBefore
        let taken = Array(pendingChanges[mark...])
        pendingChanges.removeSubrange(mark...)
        pendingPurges = pendingPurges.filter { $0 < mark }
        return taken
    }

    /// Fills the jar from storage without recording changes. Expired cookies and cookies
    /// that could never have been stored (control characters) are skipped; a later
    /// duplicate of a key wins. If the limits are exceeded, the evictions are recorded.
    public func load(_ cookies: [Cookie], now: Int64) {
        let ordered = cookies.sorted { ($0.lastAccess, $0.creationIndex) < ($1.lastAccess, $1.creationIndex) }
        for cookie in ordered where !cookie.isExpired(at: now) && Self.isStorable(cookie) {
            let bucket = bucketKey(cookie.domain)
            _ = remove(cookie.key, inBucket: bucket)
            insert(cookie, bucket: bucket)
            nextCreationIndex = max(nextCreationIndex, cookie.creationIndex + 1)
        }
        for bucket in Array(buckets.keys) { _ = enforceLimits(bucket: bucket, keeping: nil, now: now) }
    }

    /// Whether a cookie from outside (storage, import) is safe to hold: no control
    /// characters that could end up in a header, and within the size limit.
    static func isStorable(_ cookie: Cookie) -> Bool {
        !cookie.name.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && !cookie.value.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && !cookie.path.utf8.contains(where: SetCookieParser.isForbiddenControl)
            && cookie.name.utf8.count + cookie.value.utf8.count <= SetCookieParser.maxNameValueOctets
            && !(cookie.name.isEmpty && cookie.value.isEmpty)
    }

    /// Inserts a cookie that arrived from outside the HTTP path (Netscape import), replacing
    /// the one with its key and enforcing the limits. Returns false when the limits refuse it.
    func insertImported(_ incoming: Cookie, now: Int64) -> Bool {
        var cookie = incoming
        cookie.creationIndex = 0
        return store(cookie, now: now) == .stored
    }

    /// Every stored cookie, in no particular order.
    var allCookies: [Cookie] {
        buckets.values.flatMap { $0.map(\.cookie) }
    }
}

@available(*, unavailable)
extension CookieJar: Sendable {}

/// The changes `CookieJar.drainChangesMarkingPurges()` took out of a jar.
public struct CookieJarChanges: Sendable, Equatable {
    /// Oldest first, as `drainChanges()` returns them.
    public var changes: [CookieChange]
    /// Positions in `changes` of the deletions that only purged an expired cookie.
    public var expiryPurges: Set<Int>
    /// Some cookie was set again exactly as stored (last-access aside): not a change, but what it
    /// was set to may not be written yet, so the request is answered only once it is.
    public var refreshedAsStored: Bool

    public init(changes: [CookieChange], expiryPurges: Set<Int> = [], refreshedAsStored: Bool = false) {
        self.changes = changes
        self.expiryPurges = expiryPurges
        self.refreshedAsStored = refreshedAsStored
    }

    /// The changes a person or a site made (every one but the expiry purges).
    public var deliberate: [CookieChange] {
        changes.enumerated().filter { !expiryPurges.contains($0.offset) }.map(\.element)
    }
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
public enum CookieDeletionScope: Sendable, Equatable {
    case url(RequestURL, normalizedHost: String?)
    case domain(String)
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
