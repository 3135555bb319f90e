// The methods that let a user see the daemon at work, as resolvectl does systemd-resolved:
// showCache, statistics, resetStatistics, metrics and monitor.

public typealias ShowCacheParams = NoParams
public typealias StatisticsParams = NoParams
public typealias ResetStatisticsParams = NoParams
public typealias MetricsParams = NoParams
public typealias MonitorParams = NoParams

// MARK: showCache

/// `showCache`: the cache entries the caller may see (root: all; others: the names they asked for).
public struct ShowCacheResult: MethodResult {
    /// One cached answer: one host in one family.
    public struct Entry: Sendable, Equatable {
        public var host: String
        /// `ipv4` or `ipv6`.
        public var family: String
        /// Empty: the upstream said the name has no address of this family.
        public var addresses: [String]
        /// Whole seconds before the answer expires (0 once it has).
        public var ttl: Int
        /// Expired, kept only to be served while the upstreams fail (`MaxStale=`).
        public var stale: Bool
        /// The upstream that answered, when known.
        public var upstream: String?

        public init(host: String, family: String, addresses: [String], ttl: Int, stale: Bool, upstream: String?) {
            self.host = host
            self.family = family
            self.addresses = addresses
            self.ttl = ttl
            self.stale = stale
            self.upstream = upstream
        }

        public func write(to out: inout JSONOutput) {
            JSONWriter.raw(#"{"host":"#, to: &out)
            JSONWriter.string(host, to: &out)
            JSONWriter.raw(#","family":"#, to: &out)
            JSONWriter.string(family, to: &out)
            JSONWriter.raw(#","addresses":"#, to: &out)
            JSONWriter.stringArray(addresses, to: &out)
            JSONWriter.raw(#","ttl":"#, to: &out)
            JSONWriter.integer(ttl, to: &out)
            JSONWriter.raw(#","stale":"#, to: &out)
            JSONWriter.bool(stale, to: &out)
            JSONWriter.raw(#","upstream":"#, to: &out)
            JSONWriter.string(upstream, to: &out)
            out.append(UInt8(ascii: "}"))
        }

        init?(json: JSON) {
            guard let host = json["host"]?.stringValue, let family = json["family"]?.stringValue,
                let addresses = json["addresses"]?.arrayValue?.compactMap(\.stringValue),
                let ttl = nonNegativeInteger("ttl", in: json), let stale = json["stale"]?.boolValue
            else { return nil }
            self.init(
                host: host, family: family, addresses: addresses, ttl: ttl, stale: stale,
                upstream: json["upstream"]?.stringValue)
        }
    }

    /// By host, then family.
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"entries":["#, to: &out)
        for (i, entry) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            entry.write(to: &out)
        }
        JSONWriter.raw("]}", to: &out)
    }

    public init?(json: JSON) {
        guard let elements = json["entries"]?.arrayValue else { return nil }
        var entries: [Entry] = []
        for element in elements {
            guard let entry = Entry(json: element) else { return nil }
            entries.append(entry)
        }
        self.init(entries: entries)
    }
}

// MARK: statistics

/// `statistics`: the daemon's counters since it started or since the last `resetStatistics`.
public struct StatisticsResult: MethodResult {
    /// One upstream's queries.
    public struct Upstream: Sendable, Equatable {
        public var name: String
        /// Queries sent to it (each attempt of a resolve that reached it).
        public var queries: Int
        /// Those that failed (a timeout, an HTTP or parse error); an answer without an address
        /// is not a failure.
        public var failures: Int

        public init(name: String, queries: Int, failures: Int) {
            self.name = name
            self.queries = queries
            self.failures = failures
        }
    }

    /// Cookie operations of every user together (counts only).
    public struct Cookies: Sendable, Equatable {
        /// Cookies stored or replaced (handleSetCookie, importCookies).
        public var stored: Int
        /// Set-Cookie values refused (handleSetCookie).
        public var rejected: Int
        /// Cookies removed (deleteCookies, expiry, eviction, a deleting Set-Cookie).
        public var deleted: Int
        /// Cookie headers built (getCookieHeader).
        public var headers: Int

        public init(stored: Int, rejected: Int, deleted: Int, headers: Int) {
            self.stored = stored
            self.rejected = rejected
            self.deleted = deleted
            self.headers = headers
        }
    }

    /// Unix seconds the counters start from (the daemon's start or the last reset).
    public var since: Int64
    /// Cache entries now, and lookups since `since`.
    public var cache: StatusResult.Cache
    public var upstreams: [Upstream]
    public var cookies: Cookies

    public init(since: Int64, cache: StatusResult.Cache, upstreams: [Upstream], cookies: Cookies) {
        self.since = since
        self.cache = cache
        self.upstreams = upstreams
        self.cookies = cookies
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"since":"#, to: &out)
        JSONWriter.integer(since, to: &out)
        JSONWriter.raw(#","cache":{"entries":"#, to: &out)
        JSONWriter.integer(cache.entries, to: &out)
        JSONWriter.raw(#","hits":"#, to: &out)
        JSONWriter.integer(cache.hits, to: &out)
        JSONWriter.raw(#","misses":"#, to: &out)
        JSONWriter.integer(cache.misses, to: &out)
        JSONWriter.raw(#","staleServed":"#, to: &out)
        JSONWriter.integer(cache.staleServed, to: &out)
        JSONWriter.raw(#"},"upstreams":["#, to: &out)
        for (i, upstream) in upstreams.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.raw(#"{"name":"#, to: &out)
            JSONWriter.string(upstream.name, to: &out)
            JSONWriter.raw(#","queries":"#, to: &out)
            JSONWriter.integer(upstream.queries, to: &out)
            JSONWriter.raw(#","failures":"#, to: &out)
            JSONWriter.integer(upstream.failures, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw(#"],"cookies":{"stored":"#, to: &out)
        JSONWriter.integer(cookies.stored, to: &out)
        JSONWriter.raw(#","rejected":"#, to: &out)
        JSONWriter.integer(cookies.rejected, to: &out)
        JSONWriter.raw(#","deleted":"#, to: &out)
        JSONWriter.integer(cookies.deleted, to: &out)
        JSONWriter.raw(#","headers":"#, to: &out)
        JSONWriter.integer(cookies.headers, to: &out)
        JSONWriter.raw("}}", to: &out)
    }

    public init?(json: JSON) {
        guard let since = json["since"]?.numberValue?.int64Value, let cache = json["cache"],
            let entries = nonNegativeInteger("entries", in: cache), let hits = nonNegativeInteger("hits", in: cache),
            let misses = nonNegativeInteger("misses", in: cache),
            let staleServed = nonNegativeInteger("staleServed", in: cache),
            let upstreamElements = json["upstreams"]?.arrayValue, let cookies = json["cookies"],
            let stored = nonNegativeInteger("stored", in: cookies),
            let rejected = nonNegativeInteger("rejected", in: cookies),
            let deleted = nonNegativeInteger("deleted", in: cookies),
            let headers = nonNegativeInteger("headers", in: cookies)
        else { return nil }
        var upstreams: [Upstream] = []
        for element in upstreamElements {
            guard let name = element["name"]?.stringValue, let queries = nonNegativeInteger("queries", in: element),
                let failures = nonNegativeInteger("failures", in: element)
            else { return nil }
            upstreams.append(Upstream(name: name, queries: queries, failures: failures))
        }
        self.init(
            since: since, cache: .init(entries: entries, hits: hits, misses: misses, staleServed: staleServed),
            upstreams: upstreams,
            cookies: Cookies(stored: stored, rejected: rejected, deleted: deleted, headers: headers))
    }
}

/// `resetStatistics`: when counting starts again.
public struct ResetStatisticsResult: MethodResult {
    /// Unix seconds: `statistics.since` from now on.
    public var since: Int64

    public init(since: Int64) { self.since = since }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"since":"#, to: &out)
        JSONWriter.integer(since, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let since = json["since"]?.numberValue?.int64Value else { return nil }
        self.init(since: since)
    }
}

// MARK: metrics

/// `metrics`: the counters and gauges in the Prometheus text exposition format 0.0.4.
public struct MetricsResult: MethodResult {
    /// What an HTTP exporter would send as Content-Type.
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    public var contentType: String
    /// The exposition, lines ended by `\n`.
    public var text: String

    public init(contentType: String = Self.prometheusContentType, text: String) {
        self.contentType = contentType
        self.text = text
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"contentType":"#, to: &out)
        JSONWriter.string(contentType, to: &out)
        JSONWriter.raw(#","text":"#, to: &out)
        JSONWriter.string(text, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let contentType = json["contentType"]?.stringValue, let text = json["text"]?.stringValue else {
            return nil
        }
        self.init(contentType: contentType, text: text)
    }
}

// MARK: monitor

/// `monitor`'s answer; the events follow as `monitorEvent` notifications on the same connection.
public struct MonitorResult: MethodResult {
    /// The notifications' method.
    public static let eventMethod = "monitorEvent"

    /// `all`: every user's events, each with its uid (root, the daemon's user); `own`: the caller's.
    public var scope: String
    /// Events a subscriber may have waiting before newer ones are dropped (and counted).
    public var queueLimit: Int

    public init(scope: String, queueLimit: Int) {
        self.scope = scope
        self.queueLimit = queueLimit
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"scope":"#, to: &out)
        JSONWriter.string(scope, to: &out)
        JSONWriter.raw(#","queueLimit":"#, to: &out)
        JSONWriter.integer(queueLimit, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let scope = json["scope"]?.stringValue, let queueLimit = nonNegativeInteger("queueLimit", in: json) else {
            return nil
        }
        self.init(scope: scope, queueLimit: queueLimit)
    }
}
