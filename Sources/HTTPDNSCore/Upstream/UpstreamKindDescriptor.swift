import HTTPDNSProtocol

/// Everything that differs between the upstream kinds and their forms (Alibaba's v1 and v2 APIs,
/// Tencent's free and paid forms, the two DoH shapes, the system resolver): how a query is built
/// and its answer read, batching, where the service addresses come from, the credentials and
/// what the configuration must give them. The worker and the resolver machine ask the endpoint's
/// descriptor (`UpstreamEndpoint.descriptor`) and never look at the kind themselves.
public protocol UpstreamKindDescriptor: Sendable {
    /// Whether the upstream is an HTTP service, and so needs a URL.
    var needsURL: Bool { get }
    /// Whether the service bills per query and answers only the names of its console (an empty
    /// answer for any other is final).
    var isBilled: Bool { get }
    /// Names per batch request (prefetch); nil when the upstream is asked one name a request.
    var maxBatchHosts: Int? { get }
    /// What `resolve` reports as the source of its answers.
    var answerSource: ResolveResult.Source { get }
    /// Where its service addresses come from.
    var serviceAddresses: ServiceAddressSource { get }
    /// Whether its queries can carry a client address (`ClientIP=`).
    var takesClientIP: Bool { get }
    /// Whether its queries can carry Alibaba's SDNS parameters (`SDNS=`).
    var takesSDNS: Bool { get }

    /// The endpoint in the form the whole file's settings make it asked in (`AlibabaAPI=`, the
    /// Tencent account); the result's own descriptor may be another of the same kind.
    func configured(_ endpoint: UpstreamEndpoint, by resolver: DaemonConfiguration.Resolver) -> UpstreamEndpoint
    /// Why the configured endpoint cannot be asked (nil: it can), for the configuration's error.
    func configurationProblem(_ endpoint: UpstreamEndpoint) -> String?

    /// One name within `timeoutMs`.
    func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError>
    /// At most `maxBatchHosts` names (both families) in one request within `timeoutMs`: one answer
    /// per name the service answered.
    func resolveBatch(
        _ hosts: [String], at endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamQuerySettings,
        over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError>
}

/// Where an upstream's service addresses (the addresses its URL's host is reached at) come from.
public enum ServiceAddressSource: Sendable, Hashable {
    /// The URL's host alone.
    case url
    /// Alibaba's scheduler for `AlibabaRegion=`, asked at the region's boot addresses.
    case scheduler
    /// The URL's host, then `TencentBackupAddresses=`.
    case backups
}

/// What most kinds are: an HTTP service, not billed, asked one name a request at its URL's host,
/// with nothing more to configure.
extension UpstreamKindDescriptor {
    public var needsURL: Bool { true }
    public var isBilled: Bool { false }
    public var maxBatchHosts: Int? { nil }
    public var answerSource: ResolveResult.Source { .upstream }
    public var serviceAddresses: ServiceAddressSource { .url }
    public var takesClientIP: Bool { false }
    public var takesSDNS: Bool { false }

    /// Whether prefetch asks the upstream for several names in one request.
    public var batchesPrefetch: Bool { maxBatchHosts != nil }

    public func configured(_ endpoint: UpstreamEndpoint, by resolver: DaemonConfiguration.Resolver)
        -> UpstreamEndpoint
    {
        endpoint
    }

    public func configurationProblem(_ endpoint: UpstreamEndpoint) -> String? { nil }

    public func resolveBatch(
        _ hosts: [String], at endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamQuerySettings,
        over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        .failure(UpstreamError(.transport("\(endpoint.name) takes no batch")))
    }

    /// `hosts` in groups of at most `maxBatchHosts` (of one when the upstream takes no batch).
    public func batches(_ hosts: [String]) -> [[String]] {
        let size = max(1, maxBatchHosts ?? 1)
        return stride(from: 0, to: hosts.count, by: size).map { Array(hosts[$0..<min($0 + size, hosts.count)]) }
    }
}
