// The methods that let a user see the daemon at work, as resolvectl does systemd-resolved:
// showCache, statistics, resetStatistics, metrics and monitor.

public typealias ShowCacheParams = NoParams
public typealias StatisticsParams = NoParams
public typealias ResetStatisticsParams = NoParams
public typealias MetricsParams = NoParams
public typealias MonitorParams = NoParams

// MARK: showCache

/// `showCache`: the cache entries the caller may see (root: all; others: the names they asked for).
public struct ShowCacheResult: MethodResult, DescribedRecord {
    /// One cached answer: one host in one family.
    public struct Entry: DescribedRecord {
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

        public static let blank = Entry(host: "", family: "", addresses: [], ttl: 0, stale: false, upstream: nil)
        public static let fields: [ResultField<Entry>] = [
            .string("host", \.host),
            .string("family", \.family),
            .strings("addresses", \.addresses),
            .integer("ttl", \.ttl, in: nonNegative),
            .boolean("stale", \.stale),
            .string("upstream", \.upstream, nil: .null),
        ]
    }

    /// By host, then family.
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public static let blank = ShowCacheResult(entries: [])
    public static let fields: [ResultField<ShowCacheResult>] = [.objects("entries", \.entries)]
}

// MARK: statistics

/// `statistics`: the daemon's counters since it started or since the last `resetStatistics`.
public struct StatisticsResult: MethodResult, DescribedRecord {
    /// One upstream's queries.
    public struct Upstream: DescribedRecord {
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

        public static let blank = Upstream(name: "", queries: 0, failures: 0)
        public static let fields: [ResultField<Upstream>] = [
            .string("name", \.name), .integer("queries", \.queries, in: nonNegative),
            .integer("failures", \.failures, in: nonNegative),
        ]
    }

    /// Cookie operations of every user together (counts only).
    public struct Cookies: DescribedRecord {
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

        public static let blank = Cookies(stored: 0, rejected: 0, deleted: 0, headers: 0)
        public static let fields: [ResultField<Cookies>] = [
            .integer("stored", \.stored, in: nonNegative), .integer("rejected", \.rejected, in: nonNegative),
            .integer("deleted", \.deleted, in: nonNegative), .integer("headers", \.headers, in: nonNegative),
        ]
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

    public static let blank = StatisticsResult(
        since: 0, cache: .blank, upstreams: [], cookies: .blank)
    public static let fields: [ResultField<StatisticsResult>] = [
        .integer("since", \.since), .object("cache", \.cache), .objects("upstreams", \.upstreams),
        .object("cookies", \.cookies),
    ]
}

/// `resetStatistics`: when counting starts again.
public struct ResetStatisticsResult: MethodResult, DescribedRecord {
    /// Unix seconds: `statistics.since` from now on.
    public var since: Int64

    public init(since: Int64) { self.since = since }

    public static let blank = ResetStatisticsResult(since: 0)
    public static let fields: [ResultField<ResetStatisticsResult>] = [.integer("since", \.since)]
}

// MARK: metrics

/// `metrics`: the counters and gauges in the Prometheus text exposition format 0.0.4.
public struct MetricsResult: MethodResult, DescribedRecord {
    /// What an HTTP exporter would send as Content-Type.
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    public var contentType: String
    /// The exposition, lines ended by `\n`.
    public var text: String

    public init(contentType: String = Self.prometheusContentType, text: String) {
        self.contentType = contentType
        self.text = text
    }

    public static let blank = MetricsResult(contentType: "", text: "")
    public static let fields: [ResultField<MetricsResult>] = [
        .string("contentType", \.contentType), .string("text", \.text),
    ]
}

// MARK: monitor

/// `monitor`'s answer; the events follow as `monitorEvent` notifications on the same connection.
public struct MonitorResult: MethodResult, DescribedRecord {
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

    public static let blank = MonitorResult(scope: "", queueLimit: 0)
    public static let fields: [ResultField<MonitorResult>] = [
        .string("scope", \.scope), .integer("queueLimit", \.queueLimit, in: nonNegative),
    ]
}
