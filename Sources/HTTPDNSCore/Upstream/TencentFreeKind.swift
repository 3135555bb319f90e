import HTTPDNSProtocol

/// Tencent's free form (`/d?dn=NAME`, no account): one name a request.
public struct TencentFreeKind: TencentKind {
    public init() {}

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let request = TencentHTTPDNS(baseURL: endpoint.url ?? "", clientIP: endpoint.parameters.clientIP).request(
            host: host, family: family)
        return transport.fetch(request, timeoutMs: timeoutMs).flatMap {
            TencentHTTPDNS.parse(status: $0.status, body: $0.body, family: family)
        }
    }
}
