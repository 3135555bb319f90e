// The daemon's own methods: status and rpc.discover.

// MARK: status

public struct UpstreamStatus: Sendable, Equatable {
    public var name: String
    public var kind: String
    public var healthy: Bool
    public var lastError: String?
    /// Milliseconds of the last successful query.
    public var latencyMs: Double?
    /// Queries it answered since the daemon started (an answer may be "no such name").
    public var answered: Int?
    /// With `Route=` set: the routed domains whose names it is asked for, "." standing for the
    /// names outside every route when `DefaultRoute=` lists it; nil without routes.
    public var domains: [String]?
    /// For an upstream with several service addresses (a scheduled `alibaba`, a `tencent` with
    /// backups): where its queries go; nil otherwise.
    public var serviceAddresses: ServiceAddressesStatus?

    public init(
        name: String, kind: String, healthy: Bool, lastError: String?, latencyMs: Double?, answered: Int? = nil,
        domains: [String]? = nil, serviceAddresses: ServiceAddressesStatus? = nil
    ) {
        self.name = name
        self.kind = kind
        self.healthy = healthy
        self.lastError = lastError
        self.latencyMs = latencyMs
        self.answered = answered
        self.domains = domains
        self.serviceAddresses = serviceAddresses
    }

    public func write(to out: inout JSONOutput) {
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
        if let answered {
            JSONWriter.raw(#","answered":"#, to: &out)
            JSONWriter.integer(answered, to: &out)
        }
        if let domains {
            JSONWriter.raw(#","domains":"#, to: &out)
            JSONWriter.stringArray(domains, to: &out)
        }
        if let serviceAddresses {
            JSONWriter.raw(#","serviceAddresses":"#, to: &out)
            serviceAddresses.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Reads one `status.upstreams` element; `lastError` and `latencyMs` may be null or absent,
    /// `answered`, `domains` and `serviceAddresses` absent.
    public init?(json: JSON) {
        guard let name = json["name"]?.stringValue, let kind = json["kind"]?.stringValue,
            let healthy = json["healthy"]?.boolValue
        else { return nil }
        var serviceAddresses: ServiceAddressesStatus?
        if let member = json["serviceAddresses"] {
            guard let parsed = ServiceAddressesStatus(json: member) else { return nil }
            serviceAddresses = parsed
        }
        self.init(
            name: name, kind: kind, healthy: healthy, lastError: json["lastError"]?.stringValue,
            latencyMs: json["latencyMs"]?.numberValue?.doubleValue,
            answered: json["answered"]?.numberValue?.int64Value.map(Int.init),
            domains: json["domains"]?.arrayValue?.compactMap(\.stringValue), serviceAddresses: serviceAddresses)
    }
}

/// `status.upstreams[].serviceAddresses`: the addresses an upstream's queries may go to.
public struct ServiceAddressesStatus: Sendable, Equatable {
    /// One service address.
    public struct Address: Sendable, Equatable {
        public var address: String
        /// Service failures in a row since it last answered (rotated out at 3).
        public var failures: Int
        /// Rotated out: tried again once its backoff ends.
        public var backingOff: Bool

        public init(address: String, failures: Int, backingOff: Bool) {
            self.address = address
            self.failures = failures
            self.backingOff = backingOff
        }
    }

    /// `configured`, `boot`, `persisted` or `scheduler`: where the list came from.
    public var source: String
    /// The address queries go to now.
    public var current: String
    public var addresses: [Address]
    /// Why the last scheduler round got no answer; nil after an answer or without a scheduler.
    public var schedulerError: String?
    /// Seconds until the scheduler is asked again (0 while it is being asked); nil without one.
    public var nextRefresh: Double?

    public init(
        source: String, current: String, addresses: [Address], schedulerError: String?, nextRefresh: Double?
    ) {
        self.source = source
        self.current = current
        self.addresses = addresses
        self.schedulerError = schedulerError
        self.nextRefresh = nextRefresh
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"source":"#, to: &out)
        JSONWriter.string(source, to: &out)
        JSONWriter.raw(#","current":"#, to: &out)
        JSONWriter.string(current, to: &out)
        JSONWriter.raw(#","addresses":["#, to: &out)
        for (i, address) in addresses.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.raw(#"{"address":"#, to: &out)
            JSONWriter.string(address.address, to: &out)
            JSONWriter.raw(#","failures":"#, to: &out)
            JSONWriter.integer(address.failures, to: &out)
            JSONWriter.raw(#","backingOff":"#, to: &out)
            JSONWriter.bool(address.backingOff, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw(#"],"schedulerError":"#, to: &out)
        JSONWriter.string(schedulerError, to: &out)
        JSONWriter.raw(#","nextRefresh":"#, to: &out)
        if let nextRefresh {
            JSONWriter.number(JSONNumber(nextRefresh), to: &out)
        } else {
            JSONWriter.raw("null", to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Reads `status.upstreams[].serviceAddresses`; `schedulerError` and `nextRefresh` may be null.
    public init?(json: JSON) {
        guard let source = json["source"]?.stringValue, let current = json["current"]?.stringValue,
            let elements = json["addresses"]?.arrayValue
        else { return nil }
        var addresses: [Address] = []
        for element in elements {
            guard let address = element["address"]?.stringValue,
                let failures = element["failures"]?.numberValue?.int64Value,
                let backingOff = element["backingOff"]?.boolValue
            else { return nil }
            addresses.append(Address(address: address, failures: Int(failures), backingOff: backingOff))
        }
        self.init(
            source: source, current: current, addresses: addresses,
            schedulerError: json["schedulerError"]?.stringValue,
            nextRefresh: json["nextRefresh"]?.numberValue?.doubleValue)
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
    /// The fleet tier, only with a `[Fleet]` section.
    public var fleet: Fleet?

    public init(
        version: String, uptime: Double, cache: Cache, cookieCount: Int, upstreams: [UpstreamStatus],
        fleet: Fleet? = nil
    ) {
        self.version = version
        self.uptime = uptime
        self.cache = cache
        self.cookieCount = cookieCount
        self.upstreams = upstreams
        self.fleet = fleet
    }

    /// The members the contract requires; a daemon may add more after them.
    public func write(to out: inout JSONOutput) {
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
        JSONWriter.raw("]", to: &out)
        if let fleet {
            JSONWriter.raw(#","fleet":"#, to: &out)
            fleet.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Reads the members the contract promises ("at least"); extra members are ignored.
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
        var fleet: Fleet?
        if let member = json["fleet"] {
            guard let parsed = Fleet(json: member) else { return nil }
            fleet = parsed
        }
        self.init(
            version: version, uptime: uptime,
            cache: Cache(entries: entries, hits: hits, misses: misses, staleServed: staleServed),
            cookieCount: cookieCount, upstreams: upstreams, fleet: fleet)
    }
}

extension StatusResult {
    /// `status.fleet`: how the fleet tier is doing, as this daemon sees it.
    public struct Fleet: Sendable, Equatable {
        /// Redis answers (reads work; when `state` is `full`, writes do not).
        public var connected: Bool
        /// `connecting`, `connected`, `unreachable`, `authentication-failed` or `full`.
        public var state: String
        /// The last failure (kept after recovery); never a secret.
        public var lastError: String?
        /// Unix seconds of the last change of `state`.
        public var lastStateChange: Int64
        /// Seconds between a change's publication and its application here, as last measured
        /// (0 when nothing is left to read; nil before the first read).
        public var lag: Double?
        /// Local changes of shared jars not yet taken by the fleet.
        public var outbox: Int
        /// Fleet entries that failed to open or validate since start; never applied.
        public var rejected: Int

        public init(
            connected: Bool, state: String, lastError: String?, lastStateChange: Int64, lag: Double?, outbox: Int,
            rejected: Int
        ) {
            self.connected = connected
            self.state = state
            self.lastError = lastError
            self.lastStateChange = lastStateChange
            self.lag = lag
            self.outbox = outbox
            self.rejected = rejected
        }

        /// `{"connected":true,"state":"connected","lastError":null,"lastStateChange":1767225600,
        /// "lag":0.012,"outbox":0,"rejected":0}`
        public func write(to out: inout JSONOutput) {
            JSONWriter.raw(#"{"connected":"#, to: &out)
            JSONWriter.bool(connected, to: &out)
            JSONWriter.raw(#","state":"#, to: &out)
            JSONWriter.string(state, to: &out)
            JSONWriter.raw(#","lastError":"#, to: &out)
            JSONWriter.string(lastError, to: &out)
            JSONWriter.raw(#","lastStateChange":"#, to: &out)
            JSONWriter.integer(lastStateChange, to: &out)
            JSONWriter.raw(#","lag":"#, to: &out)
            if let lag {
                JSONWriter.number(JSONNumber(lag), to: &out)
            } else {
                JSONWriter.raw("null", to: &out)
            }
            JSONWriter.raw(#","outbox":"#, to: &out)
            JSONWriter.integer(outbox, to: &out)
            JSONWriter.raw(#","rejected":"#, to: &out)
            JSONWriter.integer(rejected, to: &out)
            out.append(UInt8(ascii: "}"))
        }

        /// Reads the member; `lastError` and `lag` may be null.
        public init?(json: JSON) {
            guard let connected = json["connected"]?.boolValue, let state = json["state"]?.stringValue,
                let lastStateChange = json["lastStateChange"]?.numberValue?.int64Value,
                let outbox = nonNegativeInteger("outbox", in: json),
                let rejected = nonNegativeInteger("rejected", in: json)
            else { return nil }
            self.init(
                connected: connected, state: state, lastError: json["lastError"]?.stringValue,
                lastStateChange: lastStateChange, lag: json["lag"]?.numberValue?.doubleValue, outbox: outbox,
                rejected: rejected)
        }
    }
}

// MARK: rpc.discover

/// The OpenRPC document, kept as its compact JSON text so the daemon serves it byte for byte.
public struct DiscoverResult: MethodResult {
    public let encodedDocument: [UInt8]

    public init(encodedDocument: [UInt8]) { self.encodedDocument = encodedDocument }

    public func write(to out: inout JSONOutput) { out.append(contentsOf: encodedDocument) }

    /// nil unless the result is an OpenRPC document (an object with an `openrpc` version).
    public init?(json: JSON) {
        guard json["openrpc"]?.stringValue != nil else { return nil }
        encodedDocument = json.encoded
    }

    /// The document as a JSON value.
    public var document: JSON? { try? JSONParser.parse(encodedDocument, maxDepth: 128) }
}
