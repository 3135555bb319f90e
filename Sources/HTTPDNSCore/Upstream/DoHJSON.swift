import HTTPDNSProtocol

/// DNS record types the resolver asks for.
public enum DNSRecordType: UInt16, Sendable, Hashable {
    case a = 1
    case aaaa = 28

    public var family: IPFamily { self == .a ? .ipv4 : .ipv6 }

    /// The queries a family request needs, A first.
    public static func types(for family: AddressFamily) -> [DNSRecordType] {
        family.families.map { $0 == .ipv4 ? .a : .aaaa }
    }
}

/// DNS-over-HTTPS with the JSON answer shape of Google and Cloudflare (`application/dns-json`).
public struct DoHJSON: Sendable {
    /// The configured URL, e.g. `https://dns.alidns.com/resolve`; it may already carry a query.
    public let baseURL: String

    public init(baseURL: String) {
        self.baseURL = baseURL
    }

    public func request(host: String, type: DNSRecordType) -> UpstreamHTTPRequest {
        UpstreamHTTPRequest(
            url: URLQuery.append("name=\(URLQuery.encode(host))&type=\(type.rawValue)", to: baseURL),
            headers: [UpstreamHeader("Accept", "application/dns-json")]
        )
    }

    /// `Status` is the RCODE (3 = NXDOMAIN); rows of `type` are used, CNAME and other rows skipped.
    public static func parse(status: Int, body: [UInt8], type: DNSRecordType) -> Result<UpstreamAnswer, UpstreamError> {
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        guard let json = try? JSONParser.parse(body), json.objectValue != nil else {
            return .failure(UpstreamError(.malformed("body is not a JSON object")))
        }
        guard let rcode = json["Status"]?.numberValue?.int64Value else {
            return .failure(UpstreamError(.malformed("no numeric \"Status\"")))
        }
        if json["TC"]?.boolValue == true { return .failure(UpstreamError(.truncated)) }
        let authorityTTL = minimumTTL(json["Authority"]?.arrayValue ?? [])
        if rcode == 3 {
            return .success(UpstreamAnswer(ttl: authorityTTL ?? UpstreamAnswer.defaultTTL, nameExists: false))
        }
        guard rcode == 0 else { return .failure(UpstreamError(.dnsStatus(Int(clamping: rcode)))) }

        var validator = AddressListValidator()
        var ttl: Int?
        if let rows = json["Answer"], !rows.isNull {
            guard let rows = rows.arrayValue else {
                return .failure(UpstreamError(.malformed("\"Answer\" is not an array")))
            }
            for row in rows where row["type"]?.numberValue?.int64Value == Int64(type.rawValue) {
                guard validator.add(row["data"]?.stringValue, as: type.family) else { continue }
                if let rowTTL = readTTL(row) { ttl = min(ttl ?? rowTTL, rowTTL) }
            }
        }
        // No address: a NODATA answer, which lives as long as the SOA in Authority says (RFC 2308).
        return validator.answer(ttl: ttl ?? authorityTTL ?? UpstreamAnswer.defaultTTL)
    }

    private static func readTTL(_ row: JSON) -> Int? {
        guard let value = row["TTL"]?.numberValue?.int64Value else { return nil }
        return Int(clamping: max(0, min(value, Int64(UpstreamAnswer.maxTTL))))
    }

    private static func minimumTTL(_ rows: [JSON]) -> Int? {
        rows.compactMap(readTTL).min()
    }
}
