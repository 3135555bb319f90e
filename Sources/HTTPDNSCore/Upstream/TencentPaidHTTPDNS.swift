import HTTPDNSProtocol

/// Tencent Cloud HTTPDNS's paid forms (UPSTREAMS.md §1b): the name DES- or AES-encrypted with
/// the account's key, `id=<authId>` and `alg=des|aes` in clear, and the answer encrypted the same
/// way; or, over HTTPS, the name in clear with the account's `token`. The plain-text answer inside
/// has the free form's grammar (`TencentHTTPDNS.parse`); a batch (`dn=a,b`) answers one line per
/// name, `name.:answer`.
public struct TencentPaidHTTPDNS: Sendable {
    /// Names per batch request (prefetch), Alibaba's documented cap: Tencent documents none.
    public static let maxBatchHosts = 5

    /// How the account is presented.
    public enum Credential: Sendable {
        /// `alg=des`: single DES, ECB, PKCS#5, hex; the key is 8 bytes.
        case des(authID: String, key: [UInt8])
        /// `alg=aes`: AES-128-CBC, PKCS#7, a random IV in front of the ciphertext, hex; the key is 16 bytes.
        case aes(authID: String, key: [UInt8])
        /// The HTTPS form: `token=` in clear, nothing encrypted.
        case token(String)
    }

    /// The configured URL, e.g. `http://119.29.29.98` (the `/d` path is added here).
    public let baseURL: String
    /// `ip=`: the client address answers are scheduled for, encrypted as the names are.
    public let clientIP: String?
    private let credential: Credential
    private let ciphers: any ProviderCiphers

    public init(baseURL: String, credential: Credential, clientIP: String? = nil, ciphers: any ProviderCiphers) {
        self.baseURL = URLQuery.trimmedBase(baseURL)
        self.clientIP = clientIP
        self.credential = credential
        self.ciphers = ciphers
    }

    /// A request for one name, or (prefetch) for up to `maxBatchHosts` names joined by commas.
    public func request(hosts: [String], family: AddressFamily) throws(UpstreamError) -> UpstreamHTTPRequest {
        precondition(!hosts.isEmpty && hosts.count <= Self.maxBatchHosts, "batch of \(hosts.count) hosts")
        let names = hosts.joined(separator: ",")
        var query: String
        switch credential {
        case .des(let authID, _), .aes(let authID, _):
            let algorithm = if case .des = credential { "des" } else { "aes" }
            query =
                "dn=" + (try encrypt(Array(names.utf8))) + "&id=" + URLQuery.encode(authID) + "&alg=" + algorithm
            if let clientIP { query += "&ip=" + (try encrypt(Array(clientIP.utf8))) }
        case .token(let token):
            query = "dn=" + hosts.map(URLQuery.encode).joined(separator: ",") + "&token=" + URLQuery.encode(token)
            if let clientIP { query += "&ip=" + URLQuery.encode(clientIP) }
        }
        query += "&ttl=1"
        switch family {
        case .ipv4: break
        case .ipv6: query += "&type=aaaa"
        case .both: query += "&type=addrs"
        }
        return UpstreamHTTPRequest(url: "\(baseURL)/d?\(query)")
    }

    /// The answer to a one-name request.
    public func parse(status: Int, body: [UInt8], family: AddressFamily) -> Result<UpstreamAnswer, UpstreamError> {
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        return plaintext(body).flatMap { TencentHTTPDNS.parse(status: status, body: $0, family: family) }
    }

    /// The answer to a batch: one answer per name present in it (lowercased, no trailing dot). A
    /// name whose line is missing, empty or malformed got no answer.
    public func parseBatch(status: Int, body: [UInt8], family: AddressFamily = .both)
        -> Result<[String: UpstreamAnswer], UpstreamError>
    {
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        let text: [UInt8]
        switch plaintext(body) {
        case .failure(let error): return .failure(error)
        case .success(let value): text = value
        }
        var answers: [String: UpstreamAnswer] = [:]
        for line in text.split(separator: UInt8(ascii: "\n")) {
            // A host name holds no ':', an answer's IPv6 addresses do: the first one ends the name.
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).trimmingASCIIWhitespace()
            if name.hasSuffix(".") { name.removeLast() }
            guard case .success(let host) = HostName.validate(name), answers[host] == nil,
                case .success(let answer) = TencentHTTPDNS.parse(
                    status: status, body: Array(line[line.index(after: colon)...]), family: family),
                !answer.isEmpty
            else { continue }
            answers[host] = answer
        }
        return .success(answers)
    }

    /// `hex(DES(names))`, or `hex(IV || AES-CBC(names))`.
    private func encrypt(_ names: [UInt8]) throws(UpstreamError) -> String {
        switch credential {
        case .des(_, let key):
            return Hex.encode(try ciphers.desECB(encrypt: true, names, key: key))
        case .aes(_, let key):
            let iv = ciphers.randomBytes(16)
            return Hex.encode(iv + (try ciphers.aes128CBC(encrypt: true, names, key: key, iv: iv)))
        case .token:
            return String(decoding: names, as: UTF8.self)
        }
    }

    /// The answer's text: decrypted in the encrypted forms. An empty body is the service's "no
    /// address" in every form.
    private func plaintext(_ body: [UInt8]) -> Result<[UInt8], UpstreamError> {
        let undecryptable = UpstreamError(.malformed("the answer does not decrypt with the configured key"))
        let trimmed = String(decoding: body, as: UTF8.self).trimmingASCIIWhitespace()
        if trimmed.isEmpty { return .success([]) }
        switch credential {
        case .token:
            return .success(body)
        case .des(_, let key):
            guard let ciphertext = Hex.decode(trimmed.utf8) else {
                return .failure(UpstreamError(.malformed("the encrypted answer is not hexadecimal")))
            }
            do {
                return .success(try ciphers.desECB(encrypt: false, ciphertext, key: key))
            } catch {
                return .failure(error.isCipherUnavailable ? error : undecryptable)
            }
        case .aes(_, let key):
            guard let sealed = Hex.decode(trimmed.utf8) else {
                return .failure(UpstreamError(.malformed("the encrypted answer is not hexadecimal")))
            }
            guard sealed.count >= 32 else { return .failure(undecryptable) }
            do {
                return .success(
                    try ciphers.aes128CBC(encrypt: false, Array(sealed[16...]), key: key, iv: Array(sealed[..<16])))
            } catch {
                return .failure(error.isCipherUnavailable ? error : undecryptable)
            }
        }
    }
}

extension UpstreamError {
    /// Whether the failure is the daemon's ciphers missing (libcrypto, OpenSSL's legacy
    /// provider), which is reported as it is, not as a bad answer.
    var isCipherUnavailable: Bool {
        if case .transport = code { return true }
        return false
    }
}

/// Printing or dumping the codec (in logs, `status`) must never show a key or token.
extension TencentPaidHTTPDNS: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "tencent \(baseURL) (\(form))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["baseURL": baseURL, "form": form]) }

    private var form: String {
        switch credential {
        case .des: return "des"
        case .aes: return "aes"
        case .token: return "token"
        }
    }
}

/// A credential printed or dumped shows its form only.
extension TencentPaidHTTPDNS.Credential: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        switch self {
        case .des: return "des <redacted>"
        case .aes: return "aes <redacted>"
        case .token: return "token <redacted>"
        }
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
}
