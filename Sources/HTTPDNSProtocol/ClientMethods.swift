/// Params and results of the methods that Methods.swift does not type yet (listCookies, importCookies,
/// exportCookies, flushCache, status, and the bare-count results). The daemon can parse params with
/// these types and the client builds them, as for the others.

// MARK: listCookies

public struct ListCookiesParams: Sendable, Equatable {
    /// Only cookies of this domain and its subdomains; nil: every cookie of the caller's jar.
    public var domain: String?

    public init(domain: String? = nil) { self.domain = domain }

    public init(_ params: Params) throws(RPCError) {
        domain = try params.optionalString("domain")
    }

    public var json: JSONObject {
        var o = JSONObject()
        if let domain { o.append("domain", .string(domain)) }
        return o
    }
}

public struct ListCookiesResult: Sendable, Equatable {
    public var cookies: [CookieRecord]

    public init(cookies: [CookieRecord]) { self.cookies = cookies }

    public var json: JSON { .object(["cookies": .array(cookies.map(\.json))]) }

    /// nil when `cookies` is missing or one of its elements is not a cookie.
    public init?(json: JSON) {
        guard let elements = json["cookies"]?.arrayValue else { return nil }
        var cookies: [CookieRecord] = []
        cookies.reserveCapacity(elements.count)
        for element in elements {
            guard let cookie = CookieRecord(json: element) else { return nil }
            cookies.append(cookie)
        }
        self.cookies = cookies
    }
}

// MARK: importCookies / exportCookies

public struct ImportCookiesParams: Sendable, Equatable {
    public var format: CookieFileFormat
    /// The whole cookies.txt text.
    public var data: String

    public init(format: CookieFileFormat = .netscape, data: String) {
        self.format = format
        self.data = data
    }

    public init(_ params: Params) throws(RPCError) {
        format = try params.optionalEnum("format", CookieFileFormat.self) ?? .netscape
        data = try params.requiredString("data")
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("format", .string(format.rawValue))
        o.append("data", .string(data))
        return o
    }
}

public struct ExportCookiesParams: Sendable, Equatable {
    public var format: CookieFileFormat

    public init(format: CookieFileFormat = .netscape) { self.format = format }

    public init(_ params: Params) throws(RPCError) {
        format = try params.optionalEnum("format", CookieFileFormat.self) ?? .netscape
    }

    public var json: JSONObject { ["format": .string(format.rawValue)] }
}

// MARK: flushCache

public struct FlushCacheParams: Sendable, Equatable {
    /// One host; nil flushes every entry.
    public var host: String?

    public init(host: String? = nil) { self.host = host }

    public init(_ params: Params) throws(RPCError) {
        host = try params.optionalString("host")
    }

    public var json: JSONObject {
        var o = JSONObject()
        if let host { o.append("host", .string(host)) }
        return o
    }
}

// MARK: results that are one count or one string

/// Reads `{"<member>": <non-negative integer>, ...}`, the shape of deleteCookies, importCookies and flushCache.
public enum CountResult {
    public static func count(_ member: String, in json: JSON) -> Int? {
        guard let value = json[member]?.numberValue?.int64Value, value >= 0, value <= Int64(Int.max) else {
            return nil
        }
        return Int(value)
    }
}

// MARK: status

public struct StatusResult: Sendable, Equatable {
    public struct Cache: Sendable, Equatable {
        public var entries: Int
        public var hits: Int
        public var misses: Int
        public var staleServed: Int

        public init(entries: Int, hits: Int, misses: Int, staleServed: Int) {
            self.entries = entries
            self.hits = hits
            self.misses = misses
            self.staleServed = staleServed
        }
    }

    public var version: String
    /// Seconds since the daemon started (a fraction is allowed on the wire).
    public var uptime: Double
    public var cache: Cache
    public var cookieCount: Int
    public var upstreams: [UpstreamStatus]

    public init(version: String, uptime: Double, cache: Cache, cookieCount: Int, upstreams: [UpstreamStatus]) {
        self.version = version
        self.uptime = uptime
        self.cache = cache
        self.cookieCount = cookieCount
        self.upstreams = upstreams
    }

    /// The members API.md requires; a daemon may add more after them.
    public var json: JSON {
        var o = JSONObject()
        o.append("version", .string(version))
        o.append("uptime", .double(uptime))
        o.append(
            "cache",
            [
                "entries": .int(cache.entries), "hits": .int(cache.hits), "misses": .int(cache.misses),
                "staleServed": .int(cache.staleServed),
            ])
        o.append("cookies", ["count": .int(cookieCount)])
        o.append("upstreams", .array(upstreams.map(\.json)))
        return .object(o)
    }

    /// Reads the members API.md promises ("at least"); extra members are ignored.
    public init?(json: JSON) {
        guard let version = json["version"]?.stringValue, let uptime = json["uptime"]?.numberValue?.doubleValue,
            let cache = json["cache"], let entries = CountResult.count("entries", in: cache),
            let hits = CountResult.count("hits", in: cache), let misses = CountResult.count("misses", in: cache),
            let staleServed = CountResult.count("staleServed", in: cache),
            let cookies = json["cookies"], let cookieCount = CountResult.count("count", in: cookies),
            let upstreamElements = json["upstreams"]?.arrayValue
        else { return nil }
        var upstreams: [UpstreamStatus] = []
        for element in upstreamElements {
            guard let upstream = UpstreamStatus(json: element) else { return nil }
            upstreams.append(upstream)
        }
        self.init(
            version: version, uptime: uptime,
            cache: Cache(entries: entries, hits: hits, misses: misses, staleServed: staleServed),
            cookieCount: cookieCount, upstreams: upstreams)
    }
}

extension UpstreamStatus {
    /// Reads one `status.upstreams` element; `lastError` and `latencyMs` may be null or absent.
    public init?(json: JSON) {
        guard let name = json["name"]?.stringValue, let kind = json["kind"]?.stringValue,
            let healthy = json["healthy"]?.boolValue
        else { return nil }
        self.init(
            name: name, kind: kind, healthy: healthy, lastError: json["lastError"]?.stringValue,
            latencyMs: json["latencyMs"]?.numberValue?.doubleValue)
    }
}
