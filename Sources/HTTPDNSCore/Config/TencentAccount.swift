/// `TencentAuthId=`, `TencentEncryption=`, `TencentKey=`/`TencentKeyFile=` and
/// `TencentToken=`/`TencentTokenFile=`: the account a paid `tencent` upstream presents
/// (httpdnsd.conf(5)). Keys and tokens are `ConfigSecret`s, redacted in every description.
public struct TencentAccount: Sendable, Equatable {
    /// The account's `authId`, sent in clear as `id=`.
    public var authID: String?
    /// Which cipher the key is for (`alg=`). Default DES, the SDKs' default.
    public var encryption = TencentEncryption.des
    /// The DES (8 bytes) or AES (16 bytes) key, as text.
    public var key: ConfigSecret?
    /// An absolute path the key is read from; wins over `key`.
    public var keyFile: String?
    /// The HTTPS form's token.
    public var token: ConfigSecret?
    /// An absolute path the token is read from; wins over `token`.
    public var tokenFile: String?

    public init() {}

    /// Whether the encrypted form can be used (the key may still come from its file).
    public var hasKey: Bool { authID != nil && (key != nil || keyFile != nil) }
    /// Whether the token form can be used.
    public var hasToken: Bool { token != nil || tokenFile != nil }

    /// The form an upstream at `url` is asked in: the token form over https, the encrypted form
    /// over http, each when its credential is set, else the free form.
    public func form(forURL url: String) -> TencentForm {
        if url.lowercased().hasPrefix("https://") { return hasToken ? .token : .free }
        guard hasKey else { return .free }
        switch encryption {
        case .des: return .des
        case .aes: return .aes
        }
    }
}

/// `TencentEncryption=`: the cipher of Tencent's encrypted form.
public enum TencentEncryption: String, Sendable, CaseIterable {
    case des, aes

    /// The key length the cipher takes, in bytes.
    public var keyByteCount: Int { self == .des ? 8 : 16 }

    /// What a key of the wrong length is told (the key itself is never shown).
    public func keyLengthProblem(_ byteCount: Int) -> String? {
        guard byteCount != keyByteCount else { return nil }
        let article = self == .des ? "a DES" : "an AES-128"
        return "\(article) key is \(keyByteCount) bytes, this one is \(byteCount)"
    }
}

/// How one `tencent` upstream is asked.
public enum TencentForm: String, Sendable, Equatable {
    /// `/d?dn=NAME`, no account (Tencent's debugging endpoint).
    case free
    /// `dn` and the answer DES-encrypted, `id=` and `alg=des` in clear.
    case des
    /// `dn` and the answer AES-128-CBC-encrypted, `id=` and `alg=aes` in clear.
    case aes
    /// HTTPS with `token=`.
    case token
}
