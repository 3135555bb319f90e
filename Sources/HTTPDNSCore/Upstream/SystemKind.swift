import HTTPDNSProtocol

/// The machine's own resolver (getaddrinfo): no URL, and answers reported with source `system`.
public struct SystemKind: UpstreamKindDescriptor {
    public init() {}

    public var needsURL: Bool { false }
    public var answerSource: ResolveResult.Source { .system }

    /// getaddrinfo has no TTL: answers live for the default the Alibaba and Tencent SDKs give
    /// local DNS answers.
    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        transport.lookupSystem(host, family: family).map { lookup in
            switch lookup {
            case .noSuchHost:
                return UpstreamAnswer(ttl: UpstreamAnswer.defaultTTL, nameExists: false)
            case .addresses(let addresses):
                return UpstreamAnswer(
                    ipv4: addresses.filter { $0.family == .ipv4 && family.includes(.ipv4) },
                    ipv6: addresses.filter { $0.family == .ipv6 && family.includes(.ipv6) },
                    ttl: UpstreamAnswer.defaultTTL)
            }
        }
    }
}
