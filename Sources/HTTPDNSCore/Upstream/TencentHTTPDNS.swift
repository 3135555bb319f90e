import HTTPDNSProtocol

/// Tencent Cloud (DNSPod) HTTPDNS plain-text API: `/d?dn=H&ttl=1[&type=aaaa|addrs]`.
public struct TencentHTTPDNS: Sendable {
    /// The configured URL, e.g. `http://119.29.29.99` (the `/d` path is added here).
    public let baseURL: String
    /// `ip=`: the client address answers are scheduled for; nil: the connection's source.
    public let clientIP: String?

    public init(baseURL: String, clientIP: String? = nil) {
        self.baseURL = URLQuery.trimmedBase(baseURL)
        self.clientIP = clientIP
    }

    public func request(host: String, family: AddressFamily) -> UpstreamHTTPRequest {
        var url = "\(baseURL)/d?dn=\(URLQuery.encode(host))&ttl=1"
        if let clientIP { url += "&ip=" + URLQuery.encode(clientIP) }
        switch family {
        case .ipv4: break
        case .ipv6: url += "&type=aaaa"
        case .both: url += "&type=addrs"
        }
        return UpstreamHTTPRequest(url: url)
    }

    /// Parses `ip;ip,TTL`, `v4;v4,TTL-v6;v6,TTL` (for `.both`), each optionally followed by `|clientIP`.
    /// An empty body means the service has no address for the name.
    public static func parse(status: Int, body: [UInt8], family: AddressFamily) -> Result<UpstreamAnswer, UpstreamError>
    {
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        var text = String(decoding: body, as: UTF8.self).trimmingASCIIWhitespace()
        if let bar = text.firstIndex(of: "|") { text = String(text[..<bar]) }
        var validator = AddressListValidator()
        var ttls: [IPFamily: Int] = [:]
        let parts: [(Substring, IPFamily)]
        switch family {
        case .ipv4:
            parts = [(Substring(text), .ipv4)]
        case .ipv6:
            parts = [(Substring(text), .ipv6)]
        case .both:
            let halves = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            parts = [(halves[0], .ipv4), (halves.count > 1 ? halves[1] : "", .ipv6)]
        }
        for (part, addressFamily) in parts {
            var addresses = part
            if let comma = part.lastIndex(of: ",") {
                guard let value = Int(String(part[part.index(after: comma)...]).trimmingASCIIWhitespace()), value >= 0
                else {
                    return .failure(UpstreamError(.malformed("TTL after ',' is not a number")))
                }
                ttls[addressFamily] = min(ttls[addressFamily] ?? value, value)
                addresses = part[..<comma]
            }
            // A lone "0" is not an address: it is read as a placeholder for none, not as junk.
            for entry in addresses.split(separator: ";") where entry != "0" {
                validator.add(String(entry), as: addressFamily)
            }
        }
        // A family sent without its own TTL takes the other's, else the default.
        let fallback = ttls.values.min() ?? UpstreamAnswer.defaultTTL
        return validator.answer(ipv4TTL: ttls[.ipv4] ?? fallback, ipv6TTL: ttls[.ipv6] ?? fallback)
    }
}
