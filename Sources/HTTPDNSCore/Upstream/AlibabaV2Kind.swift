import HTTPDNSProtocol

/// Alibaba's v2 API (`/v2/d`) in one of its modes (in clear, AES-CBC, AES-GCM), HMAC-signed
/// until `exp` on the service's clock.
public struct AlibabaV2Kind: AlibabaKind {
    public let mode: AlibabaV2Mode

    public init(_ mode: AlibabaV2Mode = .plain) {
        self.mode = mode
    }

    public var maxBatchHosts: Int? { AlibabaV2.maxBatchHosts }

    public func configurationProblem(_ endpoint: UpstreamEndpoint) -> String? {
        guard AlibabaV2.originAndAccount(of: endpoint.url ?? "") == nil else { return nil }
        return "v2 needs the account id as the URL's path (http://ADDRESS/ACCOUNT)"
    }

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        exchange([host], family: family, at: endpoint, timeoutMs: timeoutMs, settings: settings, over: transport)
            .map { AlibabaV2.answer(for: host, in: $0) }
    }

    public func resolveBatch(
        _ hosts: [String], at endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamQuerySettings,
        over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        exchange(hosts, family: .both, at: endpoint, timeoutMs: timeoutMs, settings: settings, over: transport)
    }

    /// One request for up to 5 names. An answer refusing the signature as expired corrects the
    /// service's clock offset by its `Date` field and is asked again once, within what is left
    /// of `timeoutMs`.
    private func exchange(
        _ hosts: [String], family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        guard let secret = settings.secretKey,
            let codec = AlibabaV2(
                baseURL: endpoint.url ?? "", secret: secret, mode: mode, aesKey: settings.alibabaAESKey,
                parameters: endpoint.parameters,
                ciphers: transport.ciphers)
        else {
            return .failure(UpstreamError(.transport("the alibaba v2 account's secret, AES key or id is not usable")))
        }
        let deadline = transport.nowNanoseconds() + Int64(timeoutMs) * 1_000_000
        var corrected = false
        while true {
            let expiry = transport.wallSeconds() + transport.serviceClockOffset + AlibabaV2.signatureLifetime
            let request: UpstreamHTTPRequest
            do {
                request = try codec.request(hosts: hosts, family: family, expiry: expiry)
            } catch {
                return .failure(error)
            }
            let remainingMs = Int((deadline - transport.nowNanoseconds()) / 1_000_000)
            guard remainingMs >= 1 else { return .failure(UpstreamError(.timeout)) }
            let response: UpstreamHTTPResponse
            switch transport.fetch(request, timeoutMs: remainingMs) {
            case .failure(let error): return .failure(error)
            case .success(let value): response = value
            }
            let parsed = codec.parseBatch(status: response.status, body: response.body, family: family)
            guard case .failure(let error) = parsed,
                error == UpstreamError(.serviceError(code: AlibabaV2.expiredSignatureCode)),
                !corrected,
                let offset = AlibabaV2.serverClockOffset(
                    dateHeader: response.values(of: "Date").first, now: transport.wallSeconds())
            else {
                return parsed
            }
            transport.serviceClockOffset = offset
            corrected = true
        }
    }
}
