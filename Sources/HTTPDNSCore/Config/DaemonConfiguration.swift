/// Everything `httpdnsd.conf` can set. `DaemonConfiguration()` is what runs with no file at all:
/// the system resolver as the only upstream and every limit at its documented default.
/// Durations are integer milliseconds (`...Ms`); sizes are bytes.
public struct DaemonConfiguration: Sendable, Equatable {
    public var resolver = Resolver()
    public var cookies = Cookies()
    public var server = Server()
    public var store = Store()
    /// `[Fleet]`: nil (no fleet) unless the file has the section.
    public var fleet: FleetConfiguration?

    public init() {}

    /// `[Resolver]`: upstreams and the DNS cache policy.
    public struct Resolver: Sendable, Equatable {
        /// `Upstream=`, tried in order.
        public var upstreams: [UpstreamEndpoint] = [.system]
        /// `SecretKey=`: Alibaba request signing. Redacted in every description.
        public var secretKey: ConfigSecret?
        /// `SecretKeyFile=`: an absolute path the daemon reads the secret from; when both are
        /// set, the file wins (the parser warns).
        public var secretKeyFile: String?
        /// `AlibabaAPI=`: which of Alibaba's resolve APIs every `alibaba` upstream is asked in.
        public var alibabaAPI = AlibabaAPI.v1
        /// `AlibabaAESKey=`: v2's separate AES key (the SDKs' `aesSecretKey`), hexadecimal; with
        /// it v2 encrypts its parameters and answers. Redacted in every description.
        public var alibabaAESKey: ConfigSecret?
        /// `AlibabaAESKeyFile=`: an absolute path that key is read from, as a credential; wins.
        public var alibabaAESKeyFile: String?
        /// `AlibabaEncryption=`: the cipher v2 encrypts with when the AES key is set.
        public var alibabaEncryption = AlibabaEncryption.gcm
        /// `Timeout=`: the budget for one resolution across all upstreams. Default 2 s, the
        /// Alibaba and Tencent SDKs' default request timeout.
        public var timeoutMs = 2_000
        /// `ServeStale=`: whether expired answers may be served (RFC 8767). Default yes.
        public var serveStale = true
        /// `MinTTL=`: floor on answer TTLs. Default 0 (honour the zone).
        public var minTTLMs = 0
        /// `MaxTTL=`: ceiling on answer TTLs. Default 1 day.
        public var maxTTLMs = 86_400_000
        /// `MaxStale=`: how long past expiry an answer may be served. Default 1 day (RFC 8767
        /// section 5 suggests 1 to 3 days).
        public var maxStaleMs = 86_400_000
        /// `NegativeTTL=`: how long "no such address" is cached. Default 30 s.
        public var negativeTTLMs = 30_000
        /// `CacheSize=`: hard cap on cache entries. Default 4096 (systemd-resolved's CACHE_MAX).
        public var cacheSize = 4_096
        /// `Prefetch=`: host names resolved at start and refreshed before expiry.
        public var prefetch: [String] = []
        /// `DomainTTL=`: TTL bounds of the names in some domains, the most specific domain's.
        public var domainTTLs: [DomainTTL] = []
        /// `RankPorts=`: hosts whose addresses are ordered by a TCP connect probe, each once.
        public var rankPorts: [RankPort] = []
        /// `CAFile=`: extra trust anchors for HTTPS upstreams (absolute path).
        public var caFile: String?
        /// `TLSName=`: the certificate name of IP-addressed HTTPS upstreams.
        public var tlsName: String?
        /// `DoHMethod=GET|POST`: how `doh` upstreams send RFC 8484 queries (GET, cache-friendly, by default).
        public var dohPost = false
        /// `Static=`: fixed answers.
        public var staticAnswers: [StaticAnswer] = []
        /// `MaxUpstreamQueries=`: upstream queries queued or running for all users together;
        /// a resolve that would need one more is answered -32003. Default 1024.
        public var maxUpstreamQueries = 1_024
        /// `MaxUpstreamQueriesPerUser=`: the same per uid, so that one user's flood of distinct
        /// names cannot take every query slot. Default 64.
        public var maxUpstreamQueriesPerUser = 64
        /// `UpstreamQueryRatePerUser=`: new upstream queries one uid may start per second, on
        /// average; past it a resolve that needs one is answered -32003 with `retryAfterMs`.
        /// Default 20: far above what one user's programs look up, far below a flood.
        public var upstreamQueryRatePerUser = 20
        /// `UpstreamQueryBurstPerUser=`: how many such queries one uid may start at once before
        /// the rate applies. Default 200 (a page of a few hundred distinct names).
        public var upstreamQueryBurstPerUser = 200
        /// `Route=`: domains whose names go to the listed upstreams only (`UpstreamRouting`).
        public var routes: [UpstreamRoute] = []
        /// `DefaultRoute=`: the upstreams of names outside every route; nil: the system
        /// resolver once any route is set, else every upstream in order.
        public var defaultRoute: [String]?
        /// `OnNetworkChange=`: what a change of the machine's addresses or routes does to the
        /// cached host answers. Default refresh (the SDKs re-resolve after a network change).
        public var onNetworkChange = NetworkChangePolicy.refresh
        /// `AlibabaRegion=`: schedule `alibaba` upstreams' service addresses through this region's
        /// scheduler; nil (the default): their URL's address only.
        public var alibabaRegion: String?
        /// `AlibabaBootAddresses=`: replaces the region's built-in boot addresses; nil keeps them.
        public var alibabaBootAddresses: [String]?
        /// `SchedulerRefresh=`: how long a scheduler answer is used. Default 6 h (Alibaba's C SDK).
        public var schedulerRefreshMs = 21_600_000
        /// `TencentBackupAddresses=`: service addresses tried after a `tencent` upstream's own.
        public var tencentBackupAddresses: [String] = []
        /// The account keys of the paid `tencent` forms.
        public var tencent = TencentAccount()

        public init() {}
    }

    /// `[Cookies]`: jar limits.
    public struct Cookies: Sendable, Equatable {
        /// `MaxPerDomain=`. Default 180, Chromium's per-domain limit (RFC 6265bis asks for at
        /// least 50).
        public var maxPerDomain = 180
        /// `MaxTotal=`. Default 3000, RFC 6265bis section 6.1's minimum total.
        public var maxTotal = 3_000

        public init() {}
    }

    /// `[Server]`: socket and request limits.
    public struct Server: Sendable, Equatable {
        /// `MaxLineLength=`: the longest request line. Default 1 MiB, the contract's promise (httpdnsd-rpc(7), FRAMING).
        public var maxLineLength = 1_048_576
        /// `MaxConnections=`: concurrent client connections. Default 4096.
        public var maxConnections = 4_096
        /// `MaxConnectionsPerUser=`: per peer uid, so one user cannot starve the others.
        public var maxConnectionsPerUser = 1_024
        /// `MaxRequestsInFlight=`: unanswered requests (notifications included) per connection.
        public var maxRequestsInFlight = 1_024
        /// `MaxRequestsInFlightPerUser=`: the same across all connections of one peer uid.
        public var maxRequestsInFlightPerUser = 4_096
        /// `MaxBatch=`: members of one JSON-RPC batch.
        public var maxBatch = 1_024
        /// `IdleExit=`: exit after this long without clients (socket activation restarts the
        /// daemon). Default 60 s; 0 (or `infinity`) means never.
        public var idleExitMs = 60_000
        /// `IdleTimeout=`: close a connection that moved no byte for this long with nothing in
        /// flight. Default 5 min: a client that keeps its connection between calls keeps it at
        /// any realistic call rate (and the clients reconnect by themselves), while a forgotten
        /// connection stops pinning a descriptor and keeping a socket-activated daemon up.
        /// 0 (or `infinity`) means never.
        public var idleTimeoutMs = 300_000
        /// `LineTimeout=`: close a connection whose unfinished request line is older than this.
        /// Default 10 s: a line over a local socket arrives in microseconds, so only a stalled or
        /// hostile writer holds one for seconds. 0 (or `infinity`) means never.
        public var lineTimeoutMs = 10_000
        /// `Socket=`: the path to bind when systemd passed no socket.
        public var socket: String?
        /// `HostsMapSize=`: slots of the hosts map the NSS module reads (176 bytes each, one per
        /// name, family and uid); 0 means no map. Default 8192 (1.4 MiB): twice the default
        /// `CacheSize=`, room for every entry used by two uids.
        public var hostsMapSlots = 8_192
        /// The bounds of `HostsMapSize=` other than 0 (a power of two between them).
        public static let hostsMapSlotRange = 64...1_048_576
        /// `LogLevel=`: the most verbose priority logged (`httpdnsd --log-level` overrides it).
        /// Default info.
        public var logLevel = LogPriority.info

        public init() {}
    }

    /// `[Store]`: the SQLite state.
    public struct Store: Sendable, Equatable {
        /// `ResetOnCorruption=`: start with an empty store instead of refusing to start when the
        /// database is corrupt. Default no: losing every cookie should be a decision.
        public var resetOnCorruption = false
        /// `Synchronous=normal|full` (SQLite's names). `normal`, the default: every acknowledged
        /// change is in the kernel before the reply, so it survives the daemon crashing or being
        /// killed; `full` also fsyncs each (group) commit, surviving power loss at the cost of one
        /// disk flush per commit.
        public var synchronousFull = false

        public init() {}
    }
}

extension DNSCacheLimits {
    /// The cache policy of a `[Resolver]` section. Millisecond settings round up to whole
    /// seconds (DNS TTLs are seconds); `infinity` saturates.
    public init(_ resolver: DaemonConfiguration.Resolver) {
        func seconds(_ milliseconds: Int) -> Int {
            milliseconds / 1_000 + (milliseconds % 1_000 == 0 ? 0 : 1)
        }
        self.init(
            minTTL: seconds(resolver.minTTLMs),
            maxTTL: seconds(resolver.maxTTLMs),
            negativeTTL: seconds(resolver.negativeTTLMs),
            maxStale: resolver.serveStale ? seconds(resolver.maxStaleMs) : 0,
            capacity: resolver.cacheSize,
            domainTTLs: DomainTTLPolicy(
                resolver.domainTTLs.map { line in
                    (
                        line.domains,
                        TTLBounds(
                            minTTL: seconds(line.minTTLMs ?? resolver.minTTLMs),
                            maxTTL: seconds(line.maxTTLMs ?? resolver.maxTTLMs))
                    )
                }))
    }
}

/// `AlibabaAPI=`: Alibaba's v1 API (`/ACCOUNT/d`, MD5-signed when a secret is set) or v2
/// (`/v2/d`, always HMAC-SHA256-signed with the hex-decoded secret).
public enum AlibabaAPI: String, Sendable, CaseIterable {
    case v1, v2
}

/// `AlibabaEncryption=`: the cipher of v2's encrypted modes, `cbc` (`m=1`, as Alibaba's iOS SDK
/// sends) or `gcm` (`m=2`, as its Android SDK does; authenticated).
public enum AlibabaEncryption: String, Sendable, CaseIterable {
    case cbc, gcm

    public var mode: AlibabaV2Mode { self == .cbc ? .aesCBC : .aesGCM }
}

/// How one v2 upstream's queries are sent (`m=`): the parameters in clear, or encrypted with the
/// AES key into `enc` and the answer's `data` encrypted the same way.
public enum AlibabaV2Mode: Int, Sendable, Equatable, CaseIterable {
    case plain = 0
    /// AES-128-CBC, PKCS#7 padding, a random 16-byte IV in front.
    case aesCBC = 1
    /// AES-128-GCM, a random 12-byte IV in front, the 16-byte tag after the ciphertext.
    case aesGCM = 2

    /// The IV's length in bytes (0 in clear).
    public var ivByteCount: Int {
        switch self {
        case .plain: return 0
        case .aesCBC: return 16
        case .aesGCM: return 12
        }
    }
}
