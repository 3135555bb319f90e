/// What Tencent's forms share: a billed service, tried at `TencentBackupAddresses=` after its
/// URL's address; the account's credentials and the URL's scheme pick the form.
public protocol TencentKind: UpstreamKindDescriptor {}

extension TencentKind {
    public var isBilled: Bool { true }
    public var serviceAddresses: ServiceAddressSource { .backups }
    public var takesClientIP: Bool { true }

    public func configured(_ endpoint: UpstreamEndpoint, by resolver: DaemonConfiguration.Resolver)
        -> UpstreamEndpoint
    {
        var endpoint = endpoint
        endpoint.tencentForm = resolver.tencent.form(forURL: endpoint.url ?? "")
        return endpoint
    }
}
