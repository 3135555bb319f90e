import HTTPDNSProtocol

/// One of Tencent's paid forms (DES, AES, token): the account's credential in every request,
/// and batches of names (`dn=a,b`) to prefetch.
public struct TencentPaidKind: TencentKind {
    /// Which credential the requests carry.
    public enum Form: Sendable, Equatable {
        case des, aes, token
    }

    public let form: Form

    public init(_ form: Form) {
        self.form = form
    }

    public var maxBatchHosts: Int? { TencentPaidHTTPDNS.maxBatchHosts }

    public func resolve(
        _ host: String, family: AddressFamily, at endpoint: UpstreamEndpoint, timeoutMs: Int,
        settings: UpstreamQuerySettings, over transport: any UpstreamExchangeTransport
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let codec: TencentPaidHTTPDNS
        let request: UpstreamHTTPRequest
        do {
            codec = try self.codec(endpoint, settings: settings, ciphers: transport.ciphers)
            request = try codec.request(hosts: [host], family: family)
        } catch {
            return .failure(error)
        }
        return transport.fetch(request, timeoutMs: timeoutMs).flatMap {
            codec.parse(status: $0.status, body: $0.body, family: family)
        }
    }

    public func resolveBatch(
        _ hosts: [String], at endpoint: UpstreamEndpoint, timeoutMs: Int, settings: UpstreamQuerySettings,
        over transport: any UpstreamExchangeTransport
    ) -> Result<[String: UpstreamAnswer], UpstreamError> {
        let codec: TencentPaidHTTPDNS
        let request: UpstreamHTTPRequest
        do {
            codec = try self.codec(endpoint, settings: settings, ciphers: transport.ciphers)
            request = try codec.request(hosts: hosts, family: .both)
        } catch {
            return .failure(error)
        }
        return transport.fetch(request, timeoutMs: timeoutMs).flatMap {
            codec.parseBatch(status: $0.status, body: $0.body, family: .both)
        }
    }

    /// The codec with the account's credential for this form; the credential is always loaded
    /// with the configuration that gave the endpoint its form.
    private func codec(_ endpoint: UpstreamEndpoint, settings: UpstreamQuerySettings, ciphers: any ProviderCiphers)
        throws(UpstreamError) -> TencentPaidHTTPDNS
    {
        let account = settings.tencent
        let missing = UpstreamError(.transport("the tencent account's credential is not loaded"))
        let credential: TencentPaidHTTPDNS.Credential
        switch form {
        case .des, .aes:
            guard let authID = account.authID, let key = account.key else { throw missing }
            let bytes = Array(key.revealed.utf8)
            credential = form == .des ? .des(authID: authID, key: bytes) : .aes(authID: authID, key: bytes)
        case .token:
            guard let token = account.token else { throw missing }
            credential = .token(token.revealed)
        }
        return TencentPaidHTTPDNS(
            baseURL: endpoint.url ?? "", credential: credential, clientIP: endpoint.parameters.clientIP,
            ciphers: ciphers)
    }
}
