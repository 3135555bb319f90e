import HTTPDNSProtocol

/// RFC 8484 DNS over HTTPS (application/dns-message), by GET or, with `DoHPost=`, POST.
public struct DoHWireKind: UpstreamKindDescriptor {
    public init() {}

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let codec = DoHWire(baseURL: endpoint.url ?? "", method: settings.dohPost ? .post : .get)
        return DNSPerTypeExchange.resolve(family, deadlineMs: timeoutMs, over: transport) { type, remaining in
            guard let request = codec.request(host: host, type: type) else {
                return .failure(UpstreamError(.malformed("cannot encode a DNS query for this name")))
            }
            return transport.fetch(request, timeoutMs: remaining).flatMap {
                DoHWire.parse(status: $0.status, body: $0.body, host: host, type: type)
            }
        }
    }
}
