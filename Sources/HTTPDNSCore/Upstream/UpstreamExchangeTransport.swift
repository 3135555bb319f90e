import HTTPDNSProtocol

/// What a descriptor's exchange runs over: the daemon's HTTP client, the system resolver and the
/// clocks on a worker thread; a scripted fake in tests. Exchanges are sans-I/O apart from these
/// calls, so multi-step ones (DoH's A then AAAA, Alibaba v2's clock correction) are testable here.
public protocol UpstreamExchangeTransport: AnyObject {
    /// Nanoseconds on a monotonic scale: deadlines within one exchange.
    func nowNanoseconds() -> Int64
    /// Unix time in whole seconds: signatures' expiry.
    func wallSeconds() -> Int64
    /// Sends one request and reads its answer within `timeoutMs`, at most `maxBodyBytes` of body
    /// (nil: the transport's default).
    func fetch(_ request: UpstreamHTTPRequest, timeoutMs: Int, maxBodyBytes: Int?) -> Result<
        UpstreamHTTPResponse, UpstreamError
    >
    /// Asks the machine's resolver (getaddrinfo) for the families of `family`.
    func lookupSystem(_ host: String, family: AddressFamily) -> Result<SystemLookup, UpstreamError>
    /// The ciphers of the providers' signed and encrypted forms.
    var ciphers: any ProviderCiphers { get }
    /// How far the provider's clock is ahead of this machine's, in seconds, as last learnt from a
    /// refused signature; shared by every exchange of the daemon.
    var serviceClockOffset: Int64 { get set }
}

extension UpstreamExchangeTransport {
    /// `fetch` with the transport's default body limit.
    public func fetch(_ request: UpstreamHTTPRequest, timeoutMs: Int) -> Result<UpstreamHTTPResponse, UpstreamError> {
        fetch(request, timeoutMs: timeoutMs, maxBodyBytes: nil)
    }
}

/// The final response to an upstream request, as a codec reads it.
public struct UpstreamHTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Every field in order; repeated ones stay separate.
    public var headers: [UpstreamHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [UpstreamHeader] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The values of every field called `name` (case-insensitive), in order.
    public func values(of name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }
}

/// What the system resolver said of a name.
public enum SystemLookup: Sendable, Equatable {
    case addresses([IPAddress])
    /// The name does not exist (EAI_NONAME).
    case noSuchHost
}

/// What the exchanges share from `[Resolver]`: the accounts' credentials and `DoHPost=`. The
/// secrets are only ever placed in signed URLs and encrypted names.
public struct UpstreamQuerySettings: Sendable {
    /// `SecretKey=` (or the contents of `SecretKeyFile=`), Alibaba's.
    public var secretKey: String?
    /// `AlibabaAESKey=` (or its file's contents): v2's key for its encrypted modes, hexadecimal.
    public var alibabaAESKey: String?
    /// The paid Tencent forms' account.
    public var tencent: TencentAccount
    /// `DoHPost=`: RFC 8484 queries are POSTed instead of sent in the URL.
    public var dohPost: Bool

    public init(
        secretKey: String? = nil, alibabaAESKey: String? = nil, tencent: TencentAccount = TencentAccount(),
        dohPost: Bool = false
    ) {
        self.secretKey = secretKey
        self.alibabaAESKey = alibabaAESKey
        self.tencent = tencent
        self.dohPost = dohPost
    }

    public init(_ resolver: DaemonConfiguration.Resolver) {
        self.init(
            secretKey: resolver.secretKey?.revealed, alibabaAESKey: resolver.alibabaAESKey?.revealed,
            tencent: resolver.tencent, dohPost: resolver.dohPost)
    }
}

/// `UpstreamQuerySettings` printed or dumped shows no secret.
extension UpstreamQuerySettings: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        func shown(_ secret: String?) -> String { secret == nil ? "nil" : "<redacted>" }
        return "UpstreamQuerySettings(secretKey: \(shown(secretKey)), alibabaAESKey: \(shown(alibabaAESKey)))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["dohPost": dohPost]) }
}
