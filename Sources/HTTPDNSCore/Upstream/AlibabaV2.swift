import HTTPDNSProtocol
import HTTPDNSURL

/// Alibaba Cloud EMAS HTTPDNS, v2 API (`/v2/d`, UPSTREAMS.md §1a): HMAC-SHA256-signed with the
/// hex-decoded secret, valid until `exp`, the parameters in clear (`m=0`) or, with the separate
/// AES key, encrypted into `enc` (`m=1` AES-128-CBC, `m=2` AES-128-GCM) with the answer's `data`
/// encrypted the same way.
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
    /// The AES key's length in bytes (AES-128).
    public static let encryptionKeyByteCount = 16

    /// `scheme://host[:port]`, where `/v2/d` goes.
    public let origin: String
    public let accountID: String
    public let mode: AlibabaV2Mode
    /// `cip` and `sdns-*`: signed, and encrypted with the names in an encrypted mode.
    public let parameters: UpstreamQueryParameters
    private let signingKey: [UInt8]
    /// The AES key's bytes; empty in clear.
    private let encryptionKey: [UInt8]
    private let ciphers: any ProviderCiphers

    /// nil when `baseURL` names no account id (a path segment), `secret` is not hexadecimal, or
    /// an encrypted `mode` has no `aesKey` of 16 bytes in hexadecimal.
    public init?(
        baseURL: String, secret: String, mode: AlibabaV2Mode = .plain, aesKey: String? = nil,
        parameters: UpstreamQueryParameters = .init(),
        ciphers: any ProviderCiphers
    ) {
        guard let (origin, account) = Self.originAndAccount(of: baseURL), let key = Self.signingKey(secret) else {
            return nil
        }
        if mode == .plain {
            self.encryptionKey = []
        } else {
            guard let aesKey, Self.encryptionKeyProblem(aesKey) == nil, let bytes = Hex.decode(aesKey.utf8) else {
                return nil
            }
            self.encryptionKey = bytes
        }
        self.origin = origin
        self.accountID = account
        self.mode = mode
        self.parameters = parameters
        self.signingKey = key
        self.ciphers = ciphers
    }

    /// Why `key` cannot be v2's AES key (nil: it can): it is the console's key, 16 bytes in
    /// hexadecimal. The key itself is never shown.
    public static func encryptionKeyProblem(_ key: String) -> String? {
        guard let bytes = Hex.decode(key.utf8) else { return "the AES key must be hexadecimal" }
        guard bytes.count == encryptionKeyByteCount else {
            return "the AES key is \(encryptionKeyByteCount) bytes (32 hexadecimal digits), this one is \(bytes.count)"
        }
        return nil
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
    /// `cip` and `sdns-*` follow `dn` and `q`. Encrypted, all of those travel only inside `enc`
    /// (the hex of the IV, then the ciphertext of their JSON object), and only
    /// `enc, exp, id, m, v` are signed, as the SDKs sign them.
    public func request(hosts: [String], family: AddressFamily, expiry: Int64) throws(UpstreamError)
        -> UpstreamHTTPRequest
    {
        precondition(!hosts.isEmpty && hosts.count <= Self.maxBatchHosts, "batch of \(hosts.count) hosts")
        let names = hosts.joined(separator: ",")
        let query = Self.queryValue(family)
        var inner: [(String, String)] = [("dn", names), ("q", query)]
        if let ip = self.parameters.clientIP { inner.append(("cip", ip)) }
        inner += self.parameters.sdns.map { ($0.name, $0.value) }
        var parameters: [(String, String)] = [("id", accountID), ("m", String(mode.rawValue))]
        if mode == .plain {
            parameters += inner
        } else {
            let object = JSON.object(JSONObject(inner.map { (key: $0.0, value: JSON.string($0.1)) }))
            parameters.append(("enc", Hex.encode(try seal(object.encoded))))
        }
        parameters += [("exp", String(expiry)), ("v", "1.0")]
        let s = try signature(parameters)
        let text = parameters.map { "\($0.0)=\(URLQuery.encode($0.1))" }.joined(separator: "&")
        return UpstreamHTTPRequest(url: "\(origin)/v2/d?\(text)&s=\(s)")
    }

    /// A fresh random IV, then `plaintext` encrypted in this codec's mode under the AES key.
    func seal(_ plaintext: [UInt8]) throws(UpstreamError) -> [UInt8] {
        let iv = ciphers.randomBytes(mode.ivByteCount)
        switch mode {
        case .plain: return plaintext
        case .aesCBC: return iv + (try ciphers.aes128CBC(encrypt: true, plaintext, key: encryptionKey, iv: iv))
        case .aesGCM: return iv + (try ciphers.aes128GCM(encrypt: true, plaintext, key: encryptionKey, iv: iv))
        }
    }

    /// The plaintext of `sealed` (IV in front) in `mode`; a wrong key or altered text is malformed.
    func open(_ sealed: [UInt8], mode: AlibabaV2Mode) throws(UpstreamError) -> [UInt8] {
        let ivCount = mode.ivByteCount
        // CBC needs at least one block after its IV, GCM at least its tag.
        guard sealed.count > ivCount + (mode == .aesGCM ? 15 : 0) else {
            throw UpstreamError(.malformed("the encrypted \"data\" is too short"))
        }
        let iv = Array(sealed[..<ivCount])
        let body = Array(sealed[ivCount...])
        switch mode {
        case .plain: return sealed
        case .aesCBC: return try ciphers.aes128CBC(encrypt: false, body, key: encryptionKey, iv: iv)
        case .aesGCM: return try ciphers.aes128GCM(encrypt: false, body, key: encryptionKey, iv: iv)
        }
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
        let data: JSON?
        switch payload(of: json) {
        case .failure(let error): return .failure(error)
        case .success(let value): data = value
        }
        guard let list = data?["answers"]?.arrayValue else {
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

    /// The answer's `data`: in clear (`mode` 0 or absent) the object itself; in an encrypted
    /// mode a base64 string, decrypted in the mode the answer names and read as JSON. An
    /// encrypted answer to a codec without the AES key is malformed, and so is an answer in
    /// clear to an encrypted request: the SDKs take it, but over plain HTTP it would let anyone
    /// on the path answer what the encryption is there to protect.
    private func payload(of json: JSON?) -> Result<JSON?, UpstreamError> {
        let modeValue = json?["mode"]?.numberValue?.int64Value ?? json?["mode"]?.stringValue.flatMap { Int64($0) } ?? 0
        if modeValue == 0 {
            guard mode == .plain else {
                return .failure(UpstreamError(.malformed("an answer in clear to a request in mode \(mode.rawValue)")))
            }
            return .success(json?["data"])
        }
        guard let answerMode = AlibabaV2Mode(rawValue: Int(clamping: modeValue)), !encryptionKey.isEmpty else {
            return .failure(
                UpstreamError(.malformed("an answer in mode \(modeValue), which this upstream cannot read")))
        }
        guard let text = json?["data"]?.stringValue, let sealed = Base64.decode(text) else {
            return .failure(UpstreamError(.malformed("the encrypted \"data\" is not base64")))
        }
        let plaintext: [UInt8]
        do {
            plaintext = try open(sealed, mode: answerMode)
        } catch {
            return .failure(error)
        }
        guard let data = try? JSONParser.parse(plaintext) else {
            return .failure(UpstreamError(.malformed("the decrypted \"data\" is not JSON")))
        }
        return .success(data)
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
    public var description: String { "alibaba v2 \(origin) (account \(accountID), m=\(mode.rawValue))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["origin": origin, "accountID": accountID, "mode": mode])
    }
}
