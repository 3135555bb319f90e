import HTTPDNSProtocol

/// Alibaba's v1 API (`/{account}/d`, `/resolve` for batches, MD5-signed `sign_` forms when a
/// secret is set).
public struct AlibabaV1Kind: AlibabaKind {
    public init() {}

    public var maxBatchHosts: Int? { AlibabaV1.maxBatchHosts }

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let codec = AlibabaV1(
            baseURL: endpoint.url ?? "", secret: settings.secretKey, parameters: endpoint.parameters)
        let request = codec.resolveRequest(host: host, family: family, now: transport.wallSeconds())
        return transport.fetch(request, timeoutMs: timeoutMs).flatMap {
            AlibabaV1.parseResolve(status: $0.status, body: $0.body, family: family)
        }
    }

    public func resolveBatch(
        _ hosts: [String], at endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamQuerySettings,
        over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        let codec = AlibabaV1(
            baseURL: endpoint.url ?? "", secret: settings.secretKey, parameters: endpoint.parameters)
        let request = codec.batchRequest(hosts: hosts, family: .both, now: transport.wallSeconds())
        return transport.fetch(request, timeoutMs: timeoutMs).flatMap {
            AlibabaV1.parseBatch(status: $0.status, body: $0.body, family: .both)
        }
    }
}
