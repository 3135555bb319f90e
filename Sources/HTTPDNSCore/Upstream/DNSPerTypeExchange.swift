import HTTPDNSProtocol

/// DNS proper asks one record type at a time: A, then AAAA, within one deadline, combined into
/// one answer.
enum DNSPerTypeExchange {
    /// `query(type, remainingMs)` for each type `family` needs; a type whose turn comes with less
    /// than 1 ms of `deadlineMs` left is a time-out, and the first failure ends the exchange.
    static func resolve(
        _ family: AddressFamily, deadlineMs: Int, over transport: any UpstreamExchangeTransport,
        _ query: (DNSRecordType, Int) -> Result<UpstreamAnswer, UpstreamError>
    ) -> Result<UpstreamAnswer, UpstreamError> {
        let deadline = transport.nowNanoseconds() + Int64(deadlineMs) * 1_000_000
        var answers: [UpstreamAnswer] = []
        for type in DNSRecordType.types(for: family) {
            let remaining = Int((deadline - transport.nowNanoseconds()) / 1_000_000)
            guard remaining >= 1 else { return .failure(UpstreamError(.timeout)) }
            switch query(type, remaining) {
            case .failure(let error): return .failure(error)
            case .success(let answer): answers.append(answer)
            }
        }
        // `types(for: .both)` is A then AAAA: each family keeps its own query's TTL.
        if answers.count == 2 { return .success(.combining(ipv4: answers[0], ipv6: answers[1])) }
        return answers.first.map { .success($0) } ?? .failure(UpstreamError(.malformed("no query was made")))
    }
}
