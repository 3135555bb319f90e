import HTTPDNSProtocol

/// Alibaba Cloud EMAS HTTPDNS, v1 API (`/{account}/d`, `/resolve`, and their signed forms).
public struct AlibabaV1: Sendable {
    /// The documented cap on hosts per batch request.
    public static let maxBatchHosts = 5
    /// How far ahead of now the signature's expiry `t` is put (the C SDK's 30 minutes).
    public static let signatureLifetime: Int64 = 30 * 60

    /// The configured URL including the account id, e.g. `http://203.107.1.1/100000`.
    public let baseURL: String
    private let secret: String?
    /// `ip=` and `sdns-*`, in every query, unsigned (v1 signs the names alone).
    private let parameters: UpstreamQueryParameters

    public init(baseURL: String, secret: String? = nil, parameters: UpstreamQueryParameters = .init()) {
        self.baseURL = URLQuery.trimmedBase(baseURL)
        self.secret = (secret?.isEmpty ?? true) ? nil : secret
        self.parameters = parameters
    }

    public var isSigned: Bool { secret != nil }

    /// `s = lowercase hex md5(signed + "-" + secret + "-" + t)`, where `signed` is the host
    /// (or the comma-joined host list of a batch) and `t` the expiry in Unix seconds.
    public static func signature(of signed: String, secret: String, expiry: Int64) -> String {
        MD5.hexDigest(signed + "-" + secret + "-" + String(expiry))
    }

    /// A single-host request; `now` (Unix seconds) only matters when signing.
    public func resolveRequest(host: String, family: AddressFamily, now: Int64) -> UpstreamHTTPRequest {
        let query = "host=" + URLQuery.encode(host) + "&query=" + AlibabaV1.queryValue(family)
        return UpstreamHTTPRequest(url: url(endpoint: "d", query: query, signing: host, now: now))
    }

    /// A batch request for up to `maxBatchHosts` validated names (used for prefetch).
    public func batchRequest(hosts: [String], family: AddressFamily = .both, now: Int64) -> UpstreamHTTPRequest {
        precondition(!hosts.isEmpty && hosts.count <= AlibabaV1.maxBatchHosts, "batch of \(hosts.count) hosts")
        let joined = hosts.joined(separator: ",")
        let query =
            "host=" + hosts.map(URLQuery.encode).joined(separator: ",") + "&query="
            + AlibabaV1.queryValue(family)
        return UpstreamHTTPRequest(url: url(endpoint: "resolve", query: query, signing: joined, now: now))
    }

    /// Splits a host list into batch-sized groups.
    public static func batches(_ hosts: [String]) -> [[String]] {
        stride(from: 0, to: hosts.count, by: maxBatchHosts).map {
            Array(hosts[$0..<min($0 + maxBatchHosts, hosts.count)])
        }
    }

    private func url(endpoint: String, query: String, signing signed: String, now: Int64) -> String {
        var query = query
        if let ip = parameters.clientIP { query += "&ip=" + URLQuery.encode(ip) }
        for parameter in parameters.sdns { query += "&\(parameter.name)=" + URLQuery.encode(parameter.value) }
        guard let secret else { return "\(baseURL)/\(endpoint)?\(query)" }
        let expiry = now + AlibabaV1.signatureLifetime
        let s = AlibabaV1.signature(of: signed, secret: secret, expiry: expiry)
        return "\(baseURL)/sign_\(endpoint)?\(query)&t=\(expiry)&s=\(s)"
    }

    private static func queryValue(_ family: AddressFamily) -> String {
        switch family {
        case .ipv4: return "4"
        case .ipv6: return "6"
        case .both: return "4,6"
        }
    }

    // MARK: - Parsing

    /// Parses a `/d` response. Only the families asked for are taken from the body.
    public static func parseResolve(status: Int, body: [UInt8], family: AddressFamily)
        -> Result<UpstreamAnswer, UpstreamError>
    {
        switch parseEnvelope(status: status, body: body) {
        case .failure(let error): return .failure(error)
        case .success(let json): return parseEntries([json], family: family)
        }
    }

    /// Parses a `/resolve` response into one answer per host present in it (lowercased, no trailing dot).
    /// Hosts missing from the body got no answer; a host whose entries are malformed is left out too.
    public static func parseBatch(status: Int, body: [UInt8], family: AddressFamily = .both)
        -> Result<[String: UpstreamAnswer], UpstreamError>
    {
        let json: JSON
        switch parseEnvelope(status: status, body: body) {
        case .failure(let error): return .failure(error)
        case .success(let value): json = value
        }
        guard let list = json["dns"]?.arrayValue else {
            return .failure(UpstreamError(.malformed("batch answer has no \"dns\" array")))
        }
        // An answer to query=4,6 may list a host once per family, so entries are grouped by host.
        var grouped: [String: [JSON]] = [:]
        var order: [String] = []
        for entry in list {
            guard let host = entry["host"]?.stringValue, case .success(let name) = HostName.validate(host) else {
                continue
            }
            if grouped[name] == nil { order.append(name) }
            grouped[name, default: []].append(entry)
        }
        var answers: [String: UpstreamAnswer] = [:]
        for name in order {
            if case .success(let answer) = parseEntries(grouped[name] ?? [], family: family) {
                answers[name] = answer
            }
        }
        return .success(answers)
    }

    /// The JSON body, or the service error / HTTP status it stands for.
    private static func parseEnvelope(status: Int, body: [UInt8]) -> Result<JSON, UpstreamError> {
        let json = try? JSONParser.parse(body)
        if let code = json?["code"]?.stringValue, code.lowercased() != "success" {
            return .failure(UpstreamError(.serviceError(code: code)))
        }
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        guard let json, json.objectValue != nil else {
            return .failure(UpstreamError(.malformed("body is not a JSON object")))
        }
        return .success(json)
    }

    /// One answer from the entries for one host: `ips`, `ipsv6`, `ttl` (else `origin_ttl`).
    /// Each family takes the TTL of the entries that carry it (an answer to `query=4,6` may
    /// list a host once per family). An answer with neither `ips` nor `ipsv6` is not this
    /// service's (a DoH server's JSON, say): malformed, not "no address".
    private static func parseEntries(_ entries: [JSON], family: AddressFamily) -> Result<UpstreamAnswer, UpstreamError>
    {
        var validator = AddressListValidator()
        var ttls: [IPFamily: Int] = [:]
        var anyList = false
        for entry in entries {
            let entryTTL = readTTL(entry)
            for (key, addressFamily, wanted) in [
                ("ips", IPFamily.ipv4, family.includes(.ipv4)),
                ("ipsv6", IPFamily.ipv6, family.includes(.ipv6)),
            ] {
                guard let value = entry[key] else { continue }
                anyList = true
                guard wanted, !value.isNull else { continue }
                guard let list = value.arrayValue else {
                    return .failure(UpstreamError(.malformed("\"\(key)\" is a \(value.typeName), not an array")))
                }
                for item in list { validator.add(item.stringValue, as: addressFamily) }
                if let entryTTL { ttls[addressFamily] = min(ttls[addressFamily] ?? entryTTL, entryTTL) }
            }
        }
        guard anyList else {
            return .failure(UpstreamError(.malformed("the answer has neither \"ips\" nor \"ipsv6\"")))
        }
        let fallback = ttls.values.min() ?? entries.compactMap(readTTL).min() ?? UpstreamAnswer.defaultTTL
        return validator.answer(ipv4TTL: ttls[.ipv4] ?? fallback, ipv6TTL: ttls[.ipv6] ?? fallback)
    }

    /// `ttl` is what is left on the server's cache; `origin_ttl` is only a fallback.
    private static func readTTL(_ entry: JSON) -> Int? {
        for key in ["ttl", "origin_ttl"] {
            if let number = entry[key]?.numberValue?.int64Value {
                return Int(clamping: max(0, min(number, Int64(UpstreamAnswer.maxTTL))))
            }
        }
        return nil
    }
}

/// Printing or dumping the codec (in logs, `status`) must never show the secret key.
extension AlibabaV1: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "alibaba \(baseURL)\(isSigned ? " (signed)" : "")" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["baseURL": baseURL, "isSigned": isSigned]) }
}
