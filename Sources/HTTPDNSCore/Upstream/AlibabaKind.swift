import HTTPDNSProtocol

/// What both of Alibaba's APIs share: a billed service that batches prefetch, reached through
/// the scheduler when `AlibabaRegion=` is set; `AlibabaAPI=` picks the API, and v2's AES key
/// and `AlibabaEncryption=` its mode.
public protocol AlibabaKind: UpstreamKindDescriptor {}

extension AlibabaKind {
    public var isBilled: Bool { true }
    public var serviceAddresses: ServiceAddressSource { .scheduler }
    public var takesClientIP: Bool { true }
    public var takesSDNS: Bool { true }

    public func configured(_ endpoint: UpstreamEndpoint, by resolver: DaemonConfiguration.Resolver)
        -> UpstreamEndpoint
    {
        var endpoint = endpoint
        endpoint.alibabaAPI = resolver.alibabaAPI
        let encrypted = resolver.alibabaAPI == .v2 && resolver.hasAlibabaAESKey
        endpoint.alibabaV2Mode = encrypted ? resolver.alibabaEncryption.mode : .plain
        return endpoint
    }
}

extension DaemonConfiguration.Resolver {
    /// Whether v2's AES key is set (it may still come from its file).
    public var hasAlibabaAESKey: Bool { alibabaAESKey != nil || alibabaAESKeyFile != nil }
}
