import HTTPDNSCore
import HTTPDNSCurl
import HTTPDNSProtocol
import HTTPDNSSystem

/// The descriptors' transport on a worker thread: its libcurl handle, getaddrinfo, the daemon's
/// clocks and libcrypto. One is made per exchange, with that exchange's settings.
final class CurlExchangeTransport: UpstreamExchangeTransport {
    private let http: HTTPClient
    private let clock: any DaemonClock
    private let serviceClock: ServiceClockOffset
    private let caFile: String?
    private let tlsName: String?

    init(http: HTTPClient, clock: any DaemonClock, serviceClock: ServiceClockOffset, caFile: String?, tlsName: String?)
    {
        self.http = http
        self.clock = clock
        self.serviceClock = serviceClock
        self.caFile = caFile
        self.tlsName = tlsName
    }

    var ciphers: any ProviderCiphers { LibCryptoCiphers() }

    var serviceClockOffset: Int64 {
        get { serviceClock.seconds }
        set { serviceClock.seconds = newValue }
    }

    func nowNanoseconds() -> Int64 { clock.nowNanoseconds() }

    func wallSeconds() -> Int64 { clock.wallSeconds() }

    func fetch(_ request: UpstreamHTTPRequest, timeoutMs: Int, maxBodyBytes: Int?) -> Result<
        UpstreamHTTPResponse, UpstreamError
    > {
        let httpRequest = HTTPRequest(
            url: request.url, method: request.method == .post ? .post : .get,
            headers: request.headers.map { HTTPHeader($0.name, $0.value) }, body: request.body, timeoutMs: timeoutMs,
            caFile: caFile, tlsName: tlsName, maxBodyBytes: maxBodyBytes ?? HTTPRequest.defaultMaxBodyBytes)
        switch http.perform(httpRequest) {
        case .success(let response):
            return .success(
                UpstreamHTTPResponse(
                    status: response.status, headers: response.headers.map { UpstreamHeader($0.name, $0.value) },
                    body: response.body))
        case .failure(let error):
            switch error.code {
            case .timeout: return .failure(UpstreamError(.timeout))
            case .bodyTooLarge: return .failure(UpstreamError(.responseTooLarge))
            default: return .failure(UpstreamError(.transport(error.description)))
            }
        }
    }

    func lookupSystem(_ host: String, family: AddressFamily) -> Result<SystemLookup, UpstreamError> {
        switch SystemResolver.lookup(host, ipv4: family.includes(.ipv4), ipv6: family.includes(.ipv6)) {
        case .success(let addresses):
            return .success(.addresses((addresses.ipv4 + addresses.ipv6).compactMap { IPAddress($0) }))
        case .failure(.noSuchHost):
            return .success(.noSuchHost)
        case .failure(.failed(let reason)):
            return .failure(UpstreamError(.transport(reason)))
        }
    }
}

@available(*, unavailable)
extension CurlExchangeTransport: Sendable {}
