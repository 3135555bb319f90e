// The daemon's own methods: status and rpc.discover.

// MARK: status

public struct UpstreamStatus: DescribedRecord {
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
    /// What is wrong with how the upstream is configured, for its operator; nil when nothing is
    /// (today: a billed service that every name outside the routes goes to).
    public var warning: String?

    public init(
        name: String, kind: String, healthy: Bool, lastError: String?, latencyMs: Double?, answered: Int? = nil,
        domains: [String]? = nil, serviceAddresses: ServiceAddressesStatus? = nil, warning: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.healthy = healthy
        self.lastError = lastError
        self.latencyMs = latencyMs
        self.answered = answered
        self.domains = domains
        self.serviceAddresses = serviceAddresses
        self.warning = warning
    }

    public static let blank = UpstreamStatus(name: "", kind: "", healthy: false, lastError: nil, latencyMs: nil)
    /// One `status.upstreams` element; `lastError` and `latencyMs` may be null (or absent when
    /// read), `answered`, `domains`, `serviceAddresses` and `warning` absent.
    public static let fields: [ResultField<UpstreamStatus>] = [
        .string("name", \.name),
        .string("kind", \.kind),
        .boolean("healthy", \.healthy),
        .string("lastError", \.lastError, nil: .null),
        .number("latencyMs", \.latencyMs),
        .integer("answered", \.answered),
        .strings("domains", \.domains),
        .object("serviceAddresses", \.serviceAddresses),
        .string("warning", \.warning, nil: .omitted),
    ]
}

/// `status.upstreams[].serviceAddresses`: the addresses an upstream's queries may go to.
public struct ServiceAddressesStatus: DescribedRecord {
    /// One service address.
    public struct Address: DescribedRecord {
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

        public static let blank = Address(address: "", failures: 0, backingOff: false)
        public static let fields: [ResultField<Address>] = [
            .string("address", \.address), .integer("failures", \.failures), .boolean("backingOff", \.backingOff),
        ]
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

    public static let blank = ServiceAddressesStatus(
        source: "", current: "", addresses: [], schedulerError: nil, nextRefresh: nil)
    /// `schedulerError` and `nextRefresh` may be null.
    public static let fields: [ResultField<ServiceAddressesStatus>] = [
        .string("source", \.source),
        .string("current", \.current),
        .objects("addresses", \.addresses),
        .string("schedulerError", \.schedulerError, nil: .null),
        .number("nextRefresh", \.nextRefresh),
    ]
}

public struct StatusResult: MethodResult, DescribedRecord {
    public struct Cache: DescribedRecord {
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

        public static let blank = Cache(entries: 0, hits: 0, misses: 0, staleServed: 0)
        public static let fields: [ResultField<Cache>] = [
            .integer("entries", \.entries, in: nonNegative), .integer("hits", \.hits, in: nonNegative),
            .integer("misses", \.misses, in: nonNegative), .integer("staleServed", \.staleServed, in: nonNegative),
        ]
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
    /// The machine's network changes as the daemon saw them (`OnNetworkChange=`).
    public var network: Network?

    public init(
        version: String, uptime: Double, cache: Cache, cookieCount: Int, upstreams: [UpstreamStatus],
        fleet: Fleet? = nil, network: Network? = nil
    ) {
        self.version = version
        self.uptime = uptime
        self.cache = cache
        self.cookieCount = cookieCount
        self.upstreams = upstreams
        self.fleet = fleet
        self.network = network
    }

    /// `status.cookies`: the caller's jar.
    public struct Cookies: DescribedRecord {
        public var count: Int

        public init(count: Int) { self.count = count }

        public static let blank = Cookies(count: 0)
        public static let fields: [ResultField<Cookies>] = [.integer("count", \.count, in: nonNegative)]
    }

    /// `cookieCount` as the wire nests it.
    public var cookies: Cookies {
        get { Cookies(count: cookieCount) }
        set { cookieCount = newValue.count }
    }

    public static let blank = StatusResult(version: "", uptime: 0, cache: .blank, cookieCount: 0, upstreams: [])
    /// The members the contract requires, and `fleet`; a daemon may add more after them, and a
    /// client ignores those it does not know.
    public static let fields: [ResultField<StatusResult>] = [
        .string("version", \.version),
        .number("uptime", \.uptime),
        .object("cache", \.cache),
        .object("cookies", \.cookies),
        .objects("upstreams", \.upstreams),
        .object("fleet", \.fleet),
        .object("network", \.network),
    ]
}

extension StatusResult {
    /// `status.fleet`: how the fleet tier is doing, as this daemon sees it.
    public struct Fleet: DescribedRecord {
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

        public static let blank = Fleet(
            connected: false, state: "", lastError: nil, lastStateChange: 0, lag: nil, outbox: 0, rejected: 0)
        /// `{"connected":true,"state":"connected","lastError":null,"lastStateChange":1767225600,
        /// "lag":0.012,"outbox":0,"rejected":0}`; `lastError` and `lag` may be null.
        public static let fields: [ResultField<Fleet>] = [
            .boolean("connected", \.connected),
            .string("state", \.state),
            .string("lastError", \.lastError, nil: .null),
            .integer("lastStateChange", \.lastStateChange),
            .number("lag", \.lag),
            .integer("outbox", \.outbox, in: nonNegative),
            .integer("rejected", \.rejected, in: nonNegative),
        ]
    }
}

extension StatusResult {
    /// `status.network`: the machine's address and route changes, as the daemon saw them.
    public struct Network: DescribedRecord {
        /// The daemon reads the kernel's notifications (false: it could not open its netlink socket).
        public var watching: Bool
        /// Changes seen since start (a burst of notifications is one).
        public var changes: Int
        /// Unix seconds of the last change; nil before the first.
        public var lastChange: Int64?

        public init(watching: Bool, changes: Int, lastChange: Int64?) {
            self.watching = watching
            self.changes = changes
            self.lastChange = lastChange
        }

        public static let blank = Network(watching: false, changes: 0, lastChange: nil)
        /// `{"watching":true,"changes":1,"lastChange":1767225600}`; `lastChange` may be null.
        public static let fields: [ResultField<Network>] = [
            .boolean("watching", \.watching),
            .integer("changes", \.changes, in: nonNegative),
            .integer("lastChange", \.lastChange, nil: .null),
        ]
    }
}

// MARK: rpc.discover

/// The OpenRPC document, kept as its compact JSON text so the daemon serves it byte for byte.
public struct DiscoverResult: MethodResult {
    public let encodedDocument: [UInt8]

    public init(encodedDocument: [UInt8]) { self.encodedDocument = encodedDocument }

    /// The document's own top-level members.
    public static let memberSchemas: [MemberSchema]? = [
        MemberSchema("openrpc", .string, required: true), MemberSchema("info", .object, required: true),
        MemberSchema("methods", .array, required: true),
    ]

    public func write(to out: inout JSONOutput) { out.append(contentsOf: encodedDocument) }

    /// nil unless the result is an OpenRPC document (an object with an `openrpc` version).
    public init?(json: JSON) {
        guard json["openrpc"]?.stringValue != nil else { return nil }
        encodedDocument = json.encoded
    }

    /// The document as a JSON value.
    public var document: JSON? { try? JSONParser.parse(encodedDocument, maxDepth: 128) }
}
