// The daemon's own methods: status and rpc.discover.

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

    public func write(to out: inout [UInt8]) {
        JSONWriter.raw(#"{"name":"#, to: &out)
        JSONWriter.string(name, to: &out)
        JSONWriter.raw(#","kind":"#, to: &out)
        JSONWriter.string(kind, to: &out)
        JSONWriter.raw(#","healthy":"#, to: &out)
        JSONWriter.bool(healthy, to: &out)
        JSONWriter.raw(#","lastError":"#, to: &out)
        JSONWriter.string(lastError, to: &out)
        JSONWriter.raw(#","latencyMs":"#, to: &out)
        if let latencyMs {
            JSONWriter.number(JSONNumber(latencyMs), to: &out)
        } else {
            JSONWriter.raw("null", to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

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

public struct StatusResult: MethodResult {
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
    /// Cookies in the caller's jar (never another user's).
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
    public func write(to out: inout [UInt8]) {
        JSONWriter.raw(#"{"version":"#, to: &out)
        JSONWriter.string(version, to: &out)
        JSONWriter.raw(#","uptime":"#, to: &out)
        JSONWriter.number(JSONNumber(uptime), to: &out)
        JSONWriter.raw(#","cache":{"entries":"#, to: &out)
        JSONWriter.integer(cache.entries, to: &out)
        JSONWriter.raw(#","hits":"#, to: &out)
        JSONWriter.integer(cache.hits, to: &out)
        JSONWriter.raw(#","misses":"#, to: &out)
        JSONWriter.integer(cache.misses, to: &out)
        JSONWriter.raw(#","staleServed":"#, to: &out)
        JSONWriter.integer(cache.staleServed, to: &out)
        JSONWriter.raw(#"},"cookies":{"count":"#, to: &out)
        JSONWriter.integer(cookieCount, to: &out)
        JSONWriter.raw(#"},"upstreams":["#, to: &out)
        for (i, upstream) in upstreams.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            upstream.write(to: &out)
        }
        JSONWriter.raw("]}", to: &out)
    }

    /// Reads the members API.md promises ("at least"); extra members are ignored.
    public init?(json: JSON) {
        guard let version = json["version"]?.stringValue, let uptime = json["uptime"]?.numberValue?.doubleValue,
            let cache = json["cache"], let entries = nonNegativeInteger("entries", in: cache),
            let hits = nonNegativeInteger("hits", in: cache), let misses = nonNegativeInteger("misses", in: cache),
            let staleServed = nonNegativeInteger("staleServed", in: cache),
            let cookies = json["cookies"], let cookieCount = nonNegativeInteger("count", in: cookies),
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

// MARK: rpc.discover

/// The OpenRPC document, kept as its compact JSON text so the daemon serves it byte for byte.
public struct DiscoverResult: MethodResult {
    public let encodedDocument: [UInt8]

    public init(encodedDocument: [UInt8]) { self.encodedDocument = encodedDocument }

    public func write(to out: inout [UInt8]) { out.append(contentsOf: encodedDocument) }

    /// nil unless the result is an OpenRPC document (an object with an `openrpc` version).
    public init?(json: JSON) {
        guard json["openrpc"]?.stringValue != nil else { return nil }
        encodedDocument = json.encoded
    }

    /// The document as a JSON value.
    public var document: JSON? { try? JSONParser.parse(encodedDocument, maxDepth: 128) }
}
