// The DNS methods: resolve, reverse, forget, flushCache.

public enum AddressFamily: String, Sendable, CaseIterable {
    case ipv4, ipv6, both
}

// MARK: resolve

public struct ResolveParams: DescribedParams {
    public var host: String
    public var family: AddressFamily
    public var allowStale: Bool
    /// nil: the configured `Timeout=`.
    public var timeoutMs: Int?
    /// With `allowStale`, an expired answer is served only after a refresh has not answered
    /// within this long (RFC 8767's client response timer); nil: at once.
    public var staleAfterMs: Int?
    /// A name outside every `Route=` is not asked of billed services (kinds alibaba and tencent):
    /// when they are all its upstreams, -32002 with reason `not-routed` at once.
    public var billedRoutesOnly: Bool
    /// The caller reads the hosts map (the NSS module): the answer is published there for the
    /// calling uid and carries that uid's key to it (`ResolveResult.hostsMapKey`).
    public var hostsMap: Bool

    /// Longest wait a caller may ask for (resolved's method timeout is 45 s).
    public static let maxTimeoutMs: Int64 = 60_000

    public init(
        host: String, family: AddressFamily = .both, allowStale: Bool = true, timeoutMs: Int? = nil,
        staleAfterMs: Int? = nil, billedRoutesOnly: Bool = false, hostsMap: Bool = false
    ) {
        self.host = host
        self.family = family
        self.allowStale = allowStale
        self.timeoutMs = timeoutMs
        self.staleAfterMs = staleAfterMs
        self.billedRoutesOnly = billedRoutesOnly
        self.hostsMap = hostsMap
    }

    /// The table's reading, written out for the request path (every resolve reads it);
    /// MethodShapeTests holds it equal to `described(_:)`, errors included.
    public init(_ params: Params) throws(RPCError) {
        self.init(host: try params.requiredString("host"))
        // Nearly every resolve sends its host alone: then the rest keep their defaults.
        if params.memberCount == 1 { return }
        family = try params.optionalEnum("family", AddressFamily.self) ?? .both
        allowStale = try params.optionalBool("allowStale") ?? true
        timeoutMs = try params.optionalInt("timeoutMs", in: 1...Self.maxTimeoutMs).map(Int.init)
        staleAfterMs = try params.optionalInt("staleAfterMs", in: 1...Self.maxTimeoutMs).map(Int.init)
        billedRoutesOnly = try params.optionalBool("billedRoutesOnly") ?? false
        hostsMap = try params.optionalBool("hostsMap") ?? false
    }

    public static let blank = ResolveParams(host: "")
    public static let fields: [ParamField<ResolveParams>] = [
        .required("host", \.host),
        .optional("family", \.family, default: .both),
        .optional("allowStale", \.allowStale, default: true, sendsDefault: true),
        .optional("timeoutMs", \.timeoutMs, in: 1...maxTimeoutMs),
        .optional("staleAfterMs", \.staleAfterMs, in: 1...maxTimeoutMs),
        .optional("billedRoutesOnly", \.billedRoutesOnly, default: false, sendsDefault: false),
        .optional("hostsMap", \.hostsMap, default: false, sendsDefault: false),
    ]
}

public struct ResolveResult: MethodResult, DescribedRecord {
    public enum Source: String, Sendable, CaseIterable {
        case cache, upstream, system, literal, `static`, fleet
    }

    /// Each family's own TTL in a dual-family answer (`ttls`).
    public struct FamilyTTLs: DescribedRecord {
        public var ipv4: Int
        public var ipv6: Int

        public init(ipv4: Int, ipv6: Int) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }

        public static let blank = FamilyTTLs(ipv4: 0, ipv6: 0)
        public static let fields: [ResultField<FamilyTTLs>] = [.integer("ipv4", \.ipv4), .integer("ipv6", \.ipv6)]
    }

    public var host: String
    public var ipv4: [String]
    public var ipv6: [String]
    /// Seconds the addresses are valid: the smaller TTL of the families that have addresses.
    public var ttl: Int
    /// For `family: both`: each family's TTL (a family without an address has the negative TTL).
    public var ttls: FamilyTTLs?
    public var stale: Bool
    public var source: Source
    /// The upstream that answered, for `source` `upstream` (and `cache`, where known).
    public var upstream: String?
    /// With `hostsMap`: the calling uid's key to the hosts map, 32 hex digits (nil: no map).
    public var hostsMapKey: String?

    public init(
        host: String, ipv4: [String], ipv6: [String], ttl: Int, ttls: FamilyTTLs? = nil, stale: Bool,
        source: Source, upstream: String? = nil, hostsMapKey: String? = nil
    ) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.ttls = ttls
        self.stale = stale
        self.source = source
        self.upstream = upstream
        self.hostsMapKey = hostsMapKey
    }

    public static let blank = ResolveResult(host: "", ipv4: [], ipv6: [], ttl: 0, stale: false, source: .cache)
    public static let fields: [ResultField<ResolveResult>] = [
        .string("host", \.host),
        .strings("ipv4", \.ipv4),
        .strings("ipv6", \.ipv6),
        .integer("ttl", \.ttl),
        .object("ttls", \.ttls),
        .boolean("stale", \.stale, absent: false),
        .string("source", \.source),
        .string("upstream", \.upstream, nil: .omitted),
        .string("hostsMapKey", \.hostsMapKey, nil: .omitted),
    ]

    /// The table's encoding, written byte by byte for the request path (a cache hit's answer);
    /// MethodShapeTests holds it equal to `writeDescribed(to:)`.
    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"host":"#, to: &out)
        JSONWriter.string(host, to: &out)
        JSONWriter.raw(#","ipv4":"#, to: &out)
        JSONWriter.stringArray(ipv4, to: &out)
        JSONWriter.raw(#","ipv6":"#, to: &out)
        JSONWriter.stringArray(ipv6, to: &out)
        JSONWriter.raw(#","ttl":"#, to: &out)
        JSONWriter.integer(ttl, to: &out)
        if let ttls {
            JSONWriter.raw(#","ttls":{"ipv4":"#, to: &out)
            JSONWriter.integer(ttls.ipv4, to: &out)
            JSONWriter.raw(#","ipv6":"#, to: &out)
            JSONWriter.integer(ttls.ipv6, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw(#","stale":"#, to: &out)
        JSONWriter.bool(stale, to: &out)
        JSONWriter.raw(#","source":"#, to: &out)
        JSONWriter.string(source.rawValue, to: &out)
        if let upstream {
            JSONWriter.raw(#","upstream":"#, to: &out)
            JSONWriter.string(upstream, to: &out)
        }
        if let hostsMapKey {
            JSONWriter.raw(#","hostsMapKey":"#, to: &out)
            JSONWriter.string(hostsMapKey, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

// MARK: reverse

public struct ReverseParams: DescribedParams {
    /// An IPv4 or IPv6 literal.
    public var address: String

    public init(address: String) { self.address = address }

    public static let blank = ReverseParams(address: "")
    public static let fields: [ParamField<ReverseParams>] = [.required("address", \.address)]
}

/// The host names the daemon handed `address` out for, to the calling uid, most recent first.
public struct ReverseResult: MethodResult, DescribedRecord {
    /// One remembered name and how long it is kept.
    public struct Name: DescribedRecord {
        public var host: String
        /// Seconds its answer is still valid (0 once only retained).
        public var ttl: Int
        /// Seconds until the daemon forgets the name for this address (the answer's TTL plus the
        /// retention period), unless `forget` or a flush comes first.
        public var rememberedFor: Int

        public init(host: String, ttl: Int, rememberedFor: Int) {
            self.host = host
            self.ttl = ttl
            self.rememberedFor = rememberedFor
        }

        public static let blank = Name(host: "", ttl: 0, rememberedFor: 0)
        public static let fields: [ResultField<Name>] = [
            .string("host", \.host), .integer("ttl", \.ttl, in: nonNegative),
            .integer("rememberedFor", \.rememberedFor, in: nonNegative),
        ]
    }

    /// The address in canonical form.
    public var address: String
    public var hosts: [String]
    /// Seconds the most recent attribution is still backed by a live answer (0 once only retained).
    public var ttl: Int
    /// `hosts` in the same order, each with its own TTL and retention end.
    public var names: [Name]

    public init(address: String, hosts: [String], ttl: Int, names: [Name]) {
        self.address = address
        self.hosts = hosts
        self.ttl = ttl
        self.names = names
    }

    public static let blank = ReverseResult(address: "", hosts: [], ttl: 0, names: [])
    public static let fields: [ResultField<ReverseResult>] = [
        .string("address", \.address), .strings("hosts", \.hosts), .integer("ttl", \.ttl, in: nonNegative),
        .objects("names", \.names),
    ]
}

// MARK: forget

/// `forget`: the caller's own memory of one address, or all of it.
public struct ForgetParams: MethodParams {
    struct Members: DescribedParams {
        var address: String? = nil
        var all: Bool? = nil

        static let blank = Members()
        static let fields: [ParamField<Members>] = [.optional("address", \.address), .optional("all", \.all)]
    }

    public enum Target: Sendable, Equatable {
        /// An IPv4 or IPv6 literal.
        case address(String)
        case all
    }

    public var target: Target

    public init(target: Target) { self.target = target }

    public init(_ params: Params) throws(RPCError) {
        let members = try Members(params)
        switch (members.address, members.all) {
        case (let address?, nil), (let address?, false?): target = .address(address)
        case (nil, true?): target = .all
        case (nil, _): throw .invalidParams(field: "address", "exactly one of address or all: true is required")
        case (_, true?): throw .invalidParams(field: "all", "only one of address or all may be given")
        }
    }

    public var json: JSONObject {
        switch target {
        case .address(let address): Members(address: address).json
        case .all: Members(all: true).json
        }
    }

    public static var memberSchemas: [MemberSchema] { Members.memberSchemas }
}

public struct ForgetResult: MethodResult, DescribedRecord {
    /// How many addresses the caller's memory no longer holds.
    public var forgotten: Int

    public init(forgotten: Int) { self.forgotten = forgotten }

    public static let blank = ForgetResult(forgotten: 0)
    public static let fields: [ResultField<ForgetResult>] = [.integer("forgotten", \.forgotten, in: nonNegative)]
}

// MARK: flushCache

public struct FlushCacheParams: DescribedParams {
    /// One host; nil flushes every entry.
    public var host: String?

    public init(host: String? = nil) { self.host = host }

    public static let blank = FlushCacheParams()
    public static let fields: [ParamField<FlushCacheParams>] = [.optional("host", \.host)]
}

public struct FlushCacheResult: MethodResult, DescribedRecord {
    /// How many cache entries were dropped.
    public var flushed: Int

    public init(flushed: Int) { self.flushed = flushed }

    public static let blank = FlushCacheResult(flushed: 0)
    public static let fields: [ResultField<FlushCacheResult>] = [.integer("flushed", \.flushed, in: nonNegative)]
}
