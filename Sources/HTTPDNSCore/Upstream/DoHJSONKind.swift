import HTTPDNSProtocol

/// DNS over HTTPS with the application/dns-json answer shape.
public struct DoHJSONKind: UpstreamKindDescriptor {
    public init() {}

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let codec = DoHJSON(baseURL: endpoint.url ?? "")
        return DNSPerTypeExchange.resolve(family, deadlineMs: timeoutMs, over: transport) { type, remaining in
            transport.fetch(codec.request(host: host, type: type), timeoutMs: remaining).flatMap {
                DoHJSON.parse(status: $0.status, body: $0.body, type: type)
            }
        }
    }
}
