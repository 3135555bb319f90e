import HTTPDNSProtocol

/// What both of Alibaba's APIs share: a billed service that batches prefetch, reached through
/// the scheduler when `AlibabaRegion=` is set; `AlibabaAPI=` picks the API.
public protocol AlibabaKind: UpstreamKindDescriptor {}

extension AlibabaKind {
    public var isBilled: Bool { true }
    public var serviceAddresses: ServiceAddressSource { .scheduler }

    public func configured(_ endpoint: UpstreamEndpoint, by resolver: DaemonConfiguration.Resolver)
        -> UpstreamEndpoint
    {
        var endpoint = endpoint
        endpoint.alibabaAPI = resolver.alibabaAPI
        return endpoint
    }
}
