/// The methods of the contract (API.md), with their typed params and results. The daemon
/// parses params with these types and the client builds them, so both agree by construction.
public enum Method: String, CaseIterable, Sendable {
    case resolve
    case reverse
    case getCookieHeader
    case handleSetCookie
    case deleteCookies
    case listCookies
    case importCookies
    case exportCookies
    case flushCache
    case status
    case discover = "rpc.discover"
}

public enum AddressFamily: String, Sendable, CaseIterable {
    case ipv4, ipv6, both
}

// MARK: resolve

public struct ResolveParams: Sendable, Equatable {
    public var host: String
    public var family: AddressFamily
    public var allowStale: Bool
    /// nil: the configured `Timeout=`.
    public var timeoutMs: Int?

    /// Longest wait a caller may ask for (resolved's method timeout is 45 s).
    public static let maxTimeoutMs: Int64 = 60_000

    public init(host: String, family: AddressFamily = .both, allowStale: Bool = true, timeoutMs: Int? = nil) {
        self.host = host
        self.family = family
        self.allowStale = allowStale
        self.timeoutMs = timeoutMs
    }

    public init(_ params: Params) throws(RPCError) {
        host = try params.requiredString("host")
        family = try params.optionalEnum("family", AddressFamily.self) ?? .both
        allowStale = try params.optionalBool("allowStale") ?? true
        timeoutMs = try params.optionalInt("timeoutMs", in: 1...Self.maxTimeoutMs).map(Int.init)
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("host", .string(host))
        o.append("family", .string(family.rawValue))
        o.append("allowStale", .bool(allowStale))
        if let timeoutMs { o.append("timeoutMs", .int(timeoutMs)) }
        return o
    }
}

public struct ResolveResult: Sendable, Equatable {
    public enum Source: String, Sendable {
        case cache, upstream, system, literal, `static`, fleet
    }

    public var host: String
    public var ipv4: [String]
    public var ipv6: [String]
    public var ttl: Int
    public var stale: Bool
    public var source: Source
    /// The upstream that answered, for `source` `upstream` (and `cache`, where known).
    public var upstream: String?

    public init(
        host: String, ipv4: [String], ipv6: [String], ttl: Int, stale: Bool, source: Source, upstream: String? = nil
    ) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.stale = stale
        self.source = source
        self.upstream = upstream
    }

    public var json: JSON {
        var o = JSONObject()
        o.append("host", .string(host))
        o.append("ipv4", .array(ipv4.map(JSON.string)))
        o.append("ipv6", .array(ipv6.map(JSON.string)))
        o.append("ttl", .int(ttl))
        o.append("stale", .bool(stale))
        o.append("source", .string(source.rawValue))
        if let upstream { o.append("upstream", .string(upstream)) }
        return .object(o)
    }

    public init?(json: JSON) {
        guard let host = json["host"]?.stringValue,
            let v4 = json["ipv4"]?.arrayValue?.compactMap(\.stringValue),
            let v6 = json["ipv6"]?.arrayValue?.compactMap(\.stringValue),
            let ttl = json["ttl"]?.numberValue?.int64Value,
            let source = json["source"]?.stringValue.flatMap(Source.init(rawValue:))
        else { return nil }
        self.init(
            host: host, ipv4: v4, ipv6: v6, ttl: Int(ttl), stale: json["stale"]?.boolValue ?? false, source: source,
            upstream: json["upstream"]?.stringValue)
    }
}

// MARK: reverse

public struct ReverseParams: Sendable, Equatable {
    /// An IPv4 or IPv6 literal.
    public var address: String

    public init(address: String) { self.address = address }

    public init(_ params: Params) throws(RPCError) {
        address = try params.requiredString("address")
    }

    public var json: JSONObject { ["address": .string(address)] }
}

/// The host names the daemon handed `address` out for, to the calling uid, most recent first.
public struct ReverseResult: Sendable, Equatable {
    /// The address in canonical form.
    public var address: String
    public var hosts: [String]
    /// Seconds the most recent attribution is still backed by a live answer (0 once only retained).
    public var ttl: Int

    public init(address: String, hosts: [String], ttl: Int) {
        self.address = address
        self.hosts = hosts
        self.ttl = ttl
    }

    public var json: JSON {
        .object(["address": .string(address), "hosts": .array(hosts.map(JSON.string)), "ttl": .int(ttl)])
    }

    public init?(json: JSON) {
        guard let address = json["address"]?.stringValue, let hosts = json["hosts"]?.arrayValue,
            let ttl = json["ttl"]?.numberValue?.int64Value, ttl >= 0
        else { return nil }
        var names: [String] = []
        for host in hosts {
            guard let name = host.stringValue else { return nil }
            names.append(name)
        }
        self.init(address: address, hosts: names, ttl: Int(ttl))
    }
}

// MARK: cookies

public struct GetCookieHeaderParams: Sendable, Equatable {
    public var url: String
    public var host: String?
    public var forScript: Bool
    public var siteForCookies: String?
    public var topLevelNavigation: Bool

    public init(
        url: String, host: String? = nil, forScript: Bool = false, siteForCookies: String? = nil,
        topLevelNavigation: Bool = false
    ) {
        self.url = url
        self.host = host
        self.forScript = forScript
        self.siteForCookies = siteForCookies
        self.topLevelNavigation = topLevelNavigation
    }

    public init(_ params: Params) throws(RPCError) {
        url = try params.requiredString("url")
        host = try params.optionalString("host")
        forScript = try params.optionalBool("forScript") ?? false
        siteForCookies = try params.optionalString("siteForCookies")
        topLevelNavigation = try params.optionalBool("topLevelNavigation") ?? false
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("url", .string(url))
        if let host { o.append("host", .string(host)) }
        if forScript { o.append("forScript", true) }
        if let siteForCookies { o.append("siteForCookies", .string(siteForCookies)) }
        if topLevelNavigation { o.append("topLevelNavigation", true) }
        return o
    }
}

public struct CookieHeaderResult: Sendable, Equatable {
    public var header: String
    public var count: Int

    public init(header: String, count: Int) {
        self.header = header
        self.count = count
    }

    public var json: JSON { .object(["header": .string(header), "count": .int(count)]) }

    public init?(json: JSON) {
        guard let header = json["header"]?.stringValue, let count = json["count"]?.numberValue?.int64Value else {
            return nil
        }
        self.init(header: header, count: Int(count))
    }
}

public struct HandleSetCookieParams: Sendable, Equatable {
    public var url: String
    public var host: String?
    public var setCookie: [String]

    public init(url: String, host: String? = nil, setCookie: [String]) {
        self.url = url
        self.host = host
        self.setCookie = setCookie
    }

    public init(_ params: Params) throws(RPCError) {
        url = try params.requiredString("url")
        host = try params.optionalString("host")
        setCookie = try params.requiredStringArray("setCookie")
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("url", .string(url))
        if let host { o.append("host", .string(host)) }
        o.append("setCookie", .array(setCookie.map(JSON.string)))
        return o
    }
}

public struct SetCookieResult: Sendable, Equatable {
    public struct Rejection: Sendable, Equatable {
        public var index: Int
        public var reason: String

        public init(index: Int, reason: String) {
            self.index = index
            self.reason = reason
        }
    }

    public var host: String
    public var stored: Int
    public var rejected: [Rejection]

    public init(host: String, stored: Int, rejected: [Rejection]) {
        self.host = host
        self.stored = stored
        self.rejected = rejected
    }

    public var json: JSON {
        .object([
            "host": .string(host), "stored": .int(stored),
            "rejected": .array(rejected.map { .object(["index": .int($0.index), "reason": .string($0.reason)]) }),
        ])
    }

    public init?(json: JSON) {
        guard let host = json["host"]?.stringValue, let stored = json["stored"]?.numberValue?.int64Value,
            let rejected = json["rejected"]?.arrayValue
        else { return nil }
        self.init(
            host: host, stored: Int(stored),
            rejected: rejected.compactMap { r in
                guard let i = r["index"]?.numberValue?.int64Value, let reason = r["reason"]?.stringValue else {
                    return nil
                }
                return Rejection(index: Int(i), reason: reason)
            })
    }
}

public struct DeleteCookiesParams: Sendable, Equatable {
    public enum Target: Sendable, Equatable {
        /// The cookies `getCookieHeader` would send to `url` (with `host` for an IP URL).
        case url(String, host: String?)
        /// Every cookie of the domain and its subdomains.
        case domain(String)
        case all
    }

    public var target: Target
    public var name: String?

    public init(target: Target, name: String? = nil) {
        self.target = target
        self.name = name
    }

    public init(_ params: Params) throws(RPCError) {
        let url = try params.optionalString("url")
        let domain = try params.optionalString("domain")
        let all = try params.optionalBool("all")
        name = try params.optionalString("name")
        let host = try params.optionalString("host")
        switch (url, domain, all) {
        case (let url?, nil, nil), (let url?, nil, false?):
            target = .url(url, host: host)
        case (nil, let domain?, nil), (nil, let domain?, false?):
            target = .domain(domain)
        case (nil, nil, true?):
            target = .all
        case (nil, nil, _):
            throw .invalidParams(field: "url", "exactly one of url, domain or all: true is required")
        default:
            // Name a member the caller actually sent: the second of the ones that clash.
            throw .invalidParams(
                field: url != nil && domain != nil ? "domain" : "all", "only one of url, domain or all may be given")
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        switch target {
        case .url(let url, let host):
            o.append("url", .string(url))
            if let host { o.append("host", .string(host)) }
        case .domain(let domain): o.append("domain", .string(domain))
        case .all: o.append("all", true)
        }
        if let name { o.append("name", .string(name)) }
        return o
    }
}

/// One cookie as `listCookies` shows it.
public struct CookieRecord: Sendable, Equatable {
    public var name: String
    public var value: String
    public var domain: String
    public var hostOnly: Bool
    public var path: String
    /// Unix seconds; nil for a session cookie.
    public var expires: Int64?
    public var secure: Bool
    public var httpOnly: Bool
    /// "strict", "lax", "none" or "default" (no valid SameSite attribute).
    public var sameSite: String
    public var partitioned: Bool
    /// Unix seconds.
    public var created: Int64

    public init(
        name: String, value: String, domain: String, hostOnly: Bool, path: String, expires: Int64?, secure: Bool,
        httpOnly: Bool, sameSite: String, partitioned: Bool, created: Int64
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
    }

    public var json: JSON {
        var o = JSONObject()
        o.append("name", .string(name))
        o.append("value", .string(value))
        o.append("domain", .string(domain))
        o.append("hostOnly", .bool(hostOnly))
        o.append("path", .string(path))
        o.append("expires", expires.map(JSON.int64) ?? .null)
        o.append("secure", .bool(secure))
        o.append("httpOnly", .bool(httpOnly))
        o.append("sameSite", .string(sameSite))
        o.append("partitioned", .bool(partitioned))
        o.append("created", .int64(created))
        return .object(o)
    }

    public init?(json: JSON) {
        guard let name = json["name"]?.stringValue, let value = json["value"]?.stringValue,
            let domain = json["domain"]?.stringValue, let path = json["path"]?.stringValue
        else { return nil }
        self.init(
            name: name, value: value, domain: domain, hostOnly: json["hostOnly"]?.boolValue ?? false, path: path,
            expires: json["expires"]?.numberValue?.int64Value, secure: json["secure"]?.boolValue ?? false,
            httpOnly: json["httpOnly"]?.boolValue ?? false, sameSite: json["sameSite"]?.stringValue ?? "default",
            partitioned: json["partitioned"]?.boolValue ?? false,
            created: json["created"]?.numberValue?.int64Value ?? 0)
    }
}

/// `importCookies` / `exportCookies` format; only Netscape cookies.txt exists.
public enum CookieFileFormat: String, Sendable {
    case netscape
}

// MARK: status

public struct UpstreamStatus: Sendable, Equatable {
    public var name: String
    public var kind: String
    public var healthy: Bool
    public var lastError: String?
    /// Milliseconds of the last successful query.
    public var latencyMs: Double?

    public init(name: String, kind: String, healthy: Bool, lastError: String?, latencyMs: Double?) {
        self.name = name
        self.kind = kind
        self.healthy = healthy
        self.lastError = lastError
        self.latencyMs = latencyMs
    }

    public var json: JSON {
        var o = JSONObject()
        o.append("name", .string(name))
        o.append("kind", .string(kind))
        o.append("healthy", .bool(healthy))
        o.append("lastError", lastError.map(JSON.string) ?? .null)
        o.append("latencyMs", latencyMs.map(JSON.double) ?? .null)
        return .object(o)
    }
}
