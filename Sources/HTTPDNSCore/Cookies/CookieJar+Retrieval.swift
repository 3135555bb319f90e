import HTTPDNSProtocol

/// Retrieval (RFC 6265bis 5.8.3), with the memory of the headers it built.
extension CookieJar {
    /// The `Cookie` header value for a request.
    ///
    /// - Parameters:
    ///   - forScript: a non-HTTP retrieval (`document.cookie`): HttpOnly cookies are left out.
    ///   - siteForCookies: the top-level site; nil means the request is same-site.
    ///   - topLevelNavigation: a cross-site top-level navigation with a safe method, which
    ///     receives `Lax` (and `Default`) cookies.
    public func cookieHeader(
        for request: CookieRequest, forScript: Bool = false, siteForCookies: RequestURL? = nil,
        topLevelNavigation: Bool = false, now: Int64
    ) -> CookieHeader {
        var crossSite = false
        if let siteForCookies { crossSite = isCrossSite(request: request.url, site: siteForCookies) }
        // Same-site requests depend only on these (and on time, which only expires cookies).
        let memoProbe =
            crossSite || !testsOnly_remembersHeaders
            ? nil
            : CookieHeaderMemory.Probe(
                CookieHeaderMemory.Key(
                    host: request.host, path: request.url.cookiePath, isSecure: request.url.isSecure,
                    forScript: forScript))
        if let memoProbe, let remembered = headerMemory.entry(for: memoProbe, version: buckets.version, now: now) {
            touch(remembered.selected, now: now)
            return CookieHeader(header: remembered.header, count: remembered.selected.count, host: request.host)
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
        if let memoProbe {
            headerMemory.remember(header, selected: selected, for: memoProbe, version: buckets.version)
        }
        return CookieHeader(header: header, count: selected.count, host: request.host)
    }

    /// Step 3: the last-access-time of the cookies sent.
    private func touch(_ selected: [CookieLocation], now: Int64) {
        for cookie in selected { buckets.touch(cookie.location, now: now) }
    }

    /// Schemeful same-site: the registrable domains (or hosts, when there is none) and the
    /// secure-ness of the schemes must both agree.
    func isCrossSite(request: RequestURL, site: RequestURL) -> Bool {
        let siteHost = rules.canonicalHost(site.host) ?? site.host
        if site.isSecure != request.isSecure { return true }
        return !CookieMatching.same(buckets.bucketKey(siteHost), buckets.bucketKey(request.host))
    }

    /// Step 4: the cookies' `name=value` pairs joined by "; ", a nameless cookie being its value
    /// alone. Measured first, then written into one allocation: appending to a `String` piece by
    /// piece was a sixth of a retrieval.
    private func serializedHeader(_ selected: [CookieLocation]) -> String {
        var length = 0
        for cookie in selected {
            // "; " and "=" included: at most three bytes more than the header needs.
            length += buckets.withCookie(at: cookie.location) {
                $0.pointee.name.utf8.count + $0.pointee.value.utf8.count + 3
            }
        }
        return String(unsafeUninitializedCapacity: length) { out in
            guard let target = out.baseAddress else { return 0 }
            var written = 0
            for (position, selectedCookie) in selected.enumerated() {
                buckets.withCookie(at: selectedCookie.location) { cookie in
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

    /// A cookie that matched a request: where it is, and what sorting and remembering need.
    struct CookieLocation {
        var location: CookieBuckets.Location
        /// The cookie's sort keys (RFC 6265bis 5.8.3 step 2), so sorting needs no lookups.
        var pathLength: Int
        var creationIndex: UInt64
        /// When the cookie expires (nil: at the end of the session), which bounds a remembered header.
        var expires: Int64?
    }

    /// Step 1 of retrieval without the SameSite/HttpOnly filters (given by `include`):
    /// domain, host-only, path and Secure. Removes expired cookies it comes across.
    func matchingCookies(
        for request: CookieRequest, now: Int64, include: (UnsafePointer<Cookie>) -> Bool
    ) -> [CookieLocation] {
        let host = request.host
        let hostIsIP = request.url.isIPLiteral
        let candidates = buckets.candidateSlots(forHost: host, isIPLiteral: hostIsIP)
        var result: [CookieLocation] = []
        var sawExpired = false
        let isSecure = request.url.isSecure
        // The request's host and path in place once, each cookie's strings in place where they
        // are stored.
        host.withUTF8Bytes { host in
            request.url.cookiePath.withUTF8Bytes { path in
                for slot in candidates {
                    result.reserveCapacity(result.count + buckets.cookieCount(inSlot: slot))
                    buckets.forEachCookie(inSlot: slot) { index, cookie in
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
                                        location: CookieBuckets.Location(slot: slot, index: index),
                                        pathLength: cookie.pointee.path.utf8.count,
                                        creationIndex: cookie.pointee.creationIndex, expires: cookie.pointee.expires))
                            }
                        }
                    }
                }
            }
        }
        guard sawExpired else { return result }
        // Rare: purging may drop buckets (which moves the others' slots), so the keys are taken
        // before it, and the match runs again after it.
        for bucket in candidates.map({ buckets.bucketKey(at: $0) }) {
            removeAll(inBucket: bucket, purgingExpired: true) { $0.isExpired(at: now) }
        }
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
}

/// Headers a jar already built, per request shape (host after normalization, path, secure or not,
/// script or not; same-site requests only): a client asking for the same URL again is answered
/// without matching, sorting or serializing (three quarters of a retrieval).
///
/// Each header is kept with the buckets' version it was built at and is served only at that
/// version (its cookies' places in the buckets hold while it does), and until the first of its
/// cookies expires. A header is kept at its shape's second miss: with many distinct URLs most are
/// asked for once, and keeping each of those cost a tenth of a lookup for nothing. Bounded: at most
/// `limit` headers of at most `maxHeaderBytes` for paths of at most `maxPathBytes`, and `limit * 4`
/// shapes seen once, each set emptied (keeping its storage) when full.
struct CookieHeaderMemory {
    struct Key: Hashable {
        var host: String
        var path: String
        var isSecure: Bool
        var forScript: Bool
    }

    struct Entry {
        var version: UInt64
        var validUntil: Int64
        var header: String
        var selected: [CookieJar.CookieLocation]
    }

    /// A key with its hash, computed once for the lookup and the keeping that may follow: the
    /// tables are keyed by the hash (an integer hashes in a fraction of a key's time), and a
    /// remembered header by its key too, so that two keys of one hash never share a header.
    struct Probe {
        let key: Key
        let hash: KeyHash

        /// Nil for a path longer than `maxPathBytes`: such a shape is neither hashed nor kept.
        init?(_ key: Key) {
            guard key.path.utf8.count <= CookieHeaderMemory.maxPathBytes else { return nil }
            self.key = key
            hash = KeyHash(value: key.hashValue)
        }
    }

    /// A key's hash as the tables' key. It is already a seeded hash, so the tables take it as it
    /// is: hashed again, each of the four table operations of a varied lookup cost a SipHash run.
    struct KeyHash: Hashable {
        let value: Int

        func hash(into hasher: inout Hasher) { hasher.combine(value) }
        func _rawHashValue(seed: Int) -> Int { value ^ seed }
    }

    private struct Remembered {
        var key: Key
        var entry: Entry
    }

    static let limit = 256
    private static let maxHeaderBytes = 4096
    /// The longest path a kept shape has: a key holds its path, and URLs run to a request line's
    /// length (1 MiB), so without it one user's 256 kept shapes could hold hundreds of MiB.
    static let maxPathBytes = 1024
    private var remembered: [KeyHash: Remembered] = [:]
    /// The hashes of shapes that missed once and are not kept.
    private var seenOnce: Set<KeyHash> = []

    /// The header remembered for the probe's key, if it is still right at `version` and `now`.
    func entry(for probe: Probe, version: UInt64, now: Int64) -> Entry? {
        guard let found = remembered[probe.hash], found.entry.version == version, now < found.entry.validUntil,
            found.key == probe.key
        else { return nil }
        return found.entry
    }

    /// Remembers `header`, built at `version` from `selected`, if its shape missed before and it
    /// is not too long to keep.
    mutating func remember(_ header: String, selected: [CookieJar.CookieLocation], for probe: Probe, version: UInt64) {
        guard header.utf8.count <= Self.maxHeaderBytes else { return }
        guard seenOnce.remove(probe.hash) != nil || remembered[probe.hash] != nil else {
            if seenOnce.count >= Self.limit * 4 { seenOnce.removeAll(keepingCapacity: true) }
            seenOnce.insert(probe.hash)
            return
        }
        // Keeping the table's storage: growing it again from empty each time it fills was a
        // tenth of a varied lookup.
        if remembered.count >= Self.limit { remembered.removeAll(keepingCapacity: true) }
        remembered[probe.hash] = Remembered(
            key: probe.key,
            entry: Entry(
                version: version, validUntil: selected.lazy.compactMap(\.expires).min() ?? Int64.max, header: header,
                selected: selected))
    }
}
