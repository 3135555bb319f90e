import HTTPDNSProtocol
import HTTPDNSURL

/// Alibaba Cloud EMAS HTTPDNS, v2 API (`/v2/d`, UPSTREAMS.md §1a), plain mode (`m=0`): the
/// parameters in clear, HMAC-SHA256-signed with the hex-decoded secret, valid until `exp`.
///
/// The configured URL is v1's (`http://203.107.1.1/100000`): its last path segment is the
/// account id, sent as `id=`, and `/v2/d` replaces the path.
public struct AlibabaV2: Sendable {
    /// Names per request (prefetch), the cap v1 documents and the SDKs keep for v2.
    public static let maxBatchHosts = 5
    /// How far ahead of now the signature's expiry `exp` is put, as the SDKs do.
    public static let signatureLifetime: Int64 = 600
    /// The code of an answer refusing the signature as expired; the daemon corrects its clock
    /// by the answer's `Date` and asks again once.
    public static let expiredSignatureCode = "SignatureExpired"

    /// `scheme://host[:port]`, where `/v2/d` goes.
    public let origin: String
    public let accountID: String
    private let signingKey: [UInt8]
    private let ciphers: any ProviderCiphers

    /// nil when `baseURL` names no account id (a path segment) or `secret` is not hexadecimal.
    public init?(baseURL: String, secret: String, ciphers: any ProviderCiphers) {
        guard let (origin, account) = Self.originAndAccount(of: baseURL), let key = Self.signingKey(secret) else {
            return nil
        }
        self.origin = origin
        self.accountID = account
        self.signingKey = key
        self.ciphers = ciphers
    }

    /// The key v2 signs with: the secret read as hexadecimal (v1 MD5s the same text instead).
    public static func signingKey(_ secret: String) -> [UInt8]? {
        guard let key = Hex.decode(secret.utf8), !key.isEmpty else { return nil }
        return key
    }

    /// `http://host:port/ACCOUNT` split into its origin and the account id (the last path
    /// segment); nil for a URL with no such segment, or with a query or fragment.
    public static func originAndAccount(of baseURL: String) -> (origin: String, account: String)? {
        guard var url = HTTPURL(URLQuery.trimmedBase(baseURL)), url.query == nil, url.fragment == nil,
            let account = url.path.split(separator: "/").last.map(String.init), !account.isEmpty
        else { return nil }
        url.path = "/"
        var origin = url.description
        origin.removeLast()
        return (origin, account)
    }

    /// The text signed: `key=value` pairs sorted by key, empty values left out, joined by `&`.
    /// Values are signed as they are, before percent-encoding.
    public static func signedContent(_ parameters: [(String, String)]) -> String {
        parameters.filter { !$0.1.isEmpty }.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// Lower-case hex HMAC-SHA256 of `signedContent(parameters)` under the signing key.
    public func signature(_ parameters: [(String, String)]) throws(UpstreamError) -> String {
        Hex.encode(try ciphers.hmacSHA256(key: signingKey, message: Array(Self.signedContent(parameters).utf8)))
    }

    /// A request for one name, or (prefetch) up to `maxBatchHosts` names joined by commas;
    /// `expiry` is `exp`, Unix seconds (the caller's corrected now + `signatureLifetime`).
    public func request(hosts: [String], family: AddressFamily, expiry: Int64) throws(UpstreamError)
        -> UpstreamHTTPRequest
    {
        precondition(!hosts.isEmpty && hosts.count <= Self.maxBatchHosts, "batch of \(hosts.count) hosts")
        let parameters: [(String, String)] = [
            ("id", accountID), ("m", "0"), ("dn", hosts.joined(separator: ",")), ("q", Self.queryValue(family)),
            ("exp", String(expiry)), ("v", "1.0"),
        ]
        let s = try signature(parameters)
        let query = parameters.map { "\($0.0)=\(URLQuery.encode($0.1))" }.joined(separator: "&")
        return UpstreamHTTPRequest(url: "\(origin)/v2/d?\(query)&s=\(s)")
    }

    private static func queryValue(_ family: AddressFamily) -> String {
        switch family {
        case .ipv4: return "4"
        case .ipv6: return "6"
        case .both: return "4,6"
        }
    }

    // MARK: - Parsing

    /// The answer for `host` among a parsed answer's: a name the service left out has no address.
    public static func answer(for host: String, in answers: [String: UpstreamAnswer]) -> UpstreamAnswer {
        answers[host] ?? UpstreamAnswer(ttl: UpstreamAnswer.defaultTTL)
    }

    /// One answer per name of `data.answers[]` (lowercased, no trailing dot); an entry that is
    /// malformed is left out.
    public func parseBatch(status: Int, body: [UInt8], family: AddressFamily = .both)
        -> Result<[String: UpstreamAnswer], UpstreamError>
    {
        let json = try? JSONParser.parse(body)
        if let code = json?["code"]?.stringValue, code.lowercased() != "success" {
            return .failure(UpstreamError(.serviceError(code: code)))
        }
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        guard let list = json?["data"]?["answers"]?.arrayValue else {
            return .failure(UpstreamError(.malformed("the answer has no \"data.answers\" array")))
        }
        var answers: [String: UpstreamAnswer] = [:]
        for entry in list {
            guard let dn = entry["dn"]?.stringValue, case .success(let name) = HostName.validate(dn),
                answers[name] == nil, case .success(let answer) = Self.parseEntry(entry, family: family)
            else { continue }
            answers[name] = answer
        }
        return .success(answers)
    }

    /// `v4` and `v6`, each `{ips, ttl, no_ip_code}`; a family without `ips` (`no_ip_code` says
    /// why) has no address. An entry with neither object is not this service's.
    private static func parseEntry(_ entry: JSON, family: AddressFamily) -> Result<UpstreamAnswer, UpstreamError> {
        var validator = AddressListValidator()
        var ttls: [IPFamily: Int] = [:]
        var anyFamily = false
        for (key, addressFamily) in [("v4", IPFamily.ipv4), ("v6", IPFamily.ipv6)] {
            guard let object = entry[key], object.objectValue != nil else { continue }
            anyFamily = true
            if let ttl = object["ttl"]?.numberValue?.int64Value {
                ttls[addressFamily] = Int(clamping: max(0, min(ttl, Int64(UpstreamAnswer.maxTTL))))
            }
            guard family.includes(addressFamily), let ips = object["ips"]?.arrayValue else { continue }
            for item in ips { validator.add(item.stringValue, as: addressFamily) }
        }
        guard anyFamily else { return .failure(UpstreamError(.malformed("the entry has neither \"v4\" nor \"v6\""))) }
        let fallback = ttls.values.min() ?? UpstreamAnswer.defaultTTL
        return validator.answer(ipv4TTL: ttls[.ipv4] ?? fallback, ipv6TTL: ttls[.ipv6] ?? fallback)
    }

    /// How far the service's clock is ahead of `now` (Unix seconds), from the `Date` header of
    /// the answer that refused the signature as expired; nil when it has none that parses.
    public static func serverClockOffset(dateHeader: String?, now: Int64) -> Int64? {
        guard let dateHeader, let serverNow = CookieDate.parse(dateHeader) else { return nil }
        return serverNow - now
    }
}

/// Printing or dumping the codec (in logs, `status`) must never show the key.
extension AlibabaV2: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "alibaba v2 \(origin) (account \(accountID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["origin": origin, "accountID": accountID]) }
}
