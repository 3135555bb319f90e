import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport

/// A transport that answers each request from a script, in order, on the manual clock: each step
/// takes its time on the clock before its answer, as a slow server would. Requests past the
/// script fail, so a test sees an exchange ask more than it meant to.
final class ScriptedExchangeTransport: UpstreamExchangeTransport {
    struct Step {
        var takesMs: Int64
        var result: Result<UpstreamHTTPResponse, UpstreamError>
    }

    struct Sent: Equatable {
        var request: UpstreamHTTPRequest
        var timeoutMs: Int
        var maxBodyBytes: Int?
    }

    let clock = ManualClock()
    var steps: [Step]
    var lookups: [String: Result<SystemLookup, UpstreamError>] = [:]
    private(set) var sent: [Sent] = []
    private(set) var lookedUp: [(String, AddressFamily)] = []
    var serviceClockOffset: Int64 = 0
    let ciphers: any ProviderCiphers

    init(_ steps: [Step] = [], ciphers: any ProviderCiphers = LibCryptoTestCiphers()) {
        self.steps = steps
        self.ciphers = ciphers
    }

    func nowNanoseconds() -> Int64 { clock.nowNanoseconds() }

    func wallSeconds() -> Int64 { clock.wallMilliseconds() / 1000 }

    func fetch(_ request: UpstreamHTTPRequest, timeoutMs: Int, maxBodyBytes: Int?) -> Result<
        UpstreamHTTPResponse, UpstreamError
    > {
        sent.append(Sent(request: request, timeoutMs: timeoutMs, maxBodyBytes: maxBodyBytes))
        guard !steps.isEmpty else { return .failure(UpstreamError(.transport("the script has no more answers"))) }
        let step = steps.removeFirst()
        guard step.takesMs < Int64(timeoutMs) else {
            clock.advance(milliseconds: Int64(timeoutMs))
            return .failure(UpstreamError(.timeout))
        }
        clock.advance(milliseconds: step.takesMs)
        return step.result
    }

    func lookupSystem(_ host: String, family: AddressFamily) -> Result<SystemLookup, UpstreamError> {
        lookedUp.append((host, family))
        return lookups[host] ?? .failure(UpstreamError(.transport("no lookup scripted for \(host)")))
    }
}

extension ScriptedExchangeTransport.Step {
    /// A 200 answer with `body`, after `ms`.
    static func ok(_ body: String, after ms: Int64 = 0, headers: [UpstreamHeader] = []) -> Self {
        Self(takesMs: ms, result: .success(UpstreamHTTPResponse(status: 200, headers: headers, body: Array(body.utf8))))
    }
}
