import CCrypto

/// HMAC-SHA256 (RFC 2104 over FIPS 180-4), OpenSSL's `HMAC`.
public enum HMACSHA256 {
    /// The 32-byte code of `message` under `key` (a key of any length, as RFC 2104 allows).
    public static func authenticationCode(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let f = try LibCrypto.functions()
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = code.withUnsafeMutableBufferPointer { out in
            key.withUnsafeBytes { keyBytes in
                message.withUnsafeBufferPointer { data in
                    f.pointee.HMAC(
                        f.pointee.EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(out.baseAddress!),
                        Int32(key.count), data.baseAddress ?? UnsafePointer(out.baseAddress!), data.count,
                        out.baseAddress!, &length)
                }
            }
        }
        guard result != nil, length == 32 else { throw CryptoError(.failed("HMAC")) }
        return code
    }
}

/// AES-128 in CBC mode with PKCS#7 padding.
public enum AES128CBC {
    public static let keyByteCount = 16
    public static let ivByteCount = 16

    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try BlockCipher.run(.aes128CBC, encrypt: true, plaintext, key: key, iv: iv)
    }

    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try BlockCipher.run(.aes128CBC, encrypt: false, ciphertext, key: key, iv: iv)
    }
}

/// Single DES in ECB mode with PKCS#5 padding, for the one service protocol that still asks for it
/// (Tencent's paid HTTPDNS). OpenSSL 3 keeps single DES in its legacy provider; it is loaded, with
/// the default provider beside it, into a library context of this type's own, so the rest of the
/// process (libcurl's TLS) never sees legacy algorithms, and only on the first DES call, so a
/// daemon without a DES upstream never maps `legacy.so`.
public enum DESECB {
    public static let keyByteCount = 8

    public static func encrypt(_ plaintext: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try BlockCipher.run(.desECB(try LegacyContext.desECB()), encrypt: true, plaintext, key: key, iv: [])
    }

    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try BlockCipher.run(.desECB(try LegacyContext.desECB()), encrypt: false, ciphertext, key: key, iv: [])
    }
}

/// AES-128 in GCM mode: a 16-byte tag, an IV of any length (12 bytes is the standard's own).
public enum AES128GCM {
    public static let keyByteCount = 16
    public static let tagByteCount = 16

    /// The ciphertext (as long as `plaintext`) and its tag.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> (
        ciphertext: [UInt8], tag: [UInt8]
    ) {
        try BlockCipher.gcm(encrypt: true, plaintext, key: key, iv: iv, tag: nil)
    }

    /// The plaintext, or `.rejected` when `tag` does not authenticate `ciphertext` under `key`.
    public static func open(_ ciphertext: [UInt8], tag: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        guard tag.count == tagByteCount else {
            throw CryptoError(.badLength(what: "the GCM tag", expected: tagByteCount, got: tag.count))
        }
        return try BlockCipher.gcm(encrypt: false, ciphertext, key: key, iv: iv, tag: tag).ciphertext
    }
}

/// The EVP calls the ciphers share.
private enum BlockCipher {
    enum Algorithm {
        case aes128CBC
        case desECB(FetchedCipher)

        var keyByteCount: Int {
            switch self {
            case .aes128CBC: return AES128CBC.keyByteCount
            case .desECB: return DESECB.keyByteCount
            }
        }

        var ivByteCount: Int {
            switch self {
            case .aes128CBC: return AES128CBC.ivByteCount
            case .desECB: return 0
            }
        }

        var name: String {
            switch self {
            case .aes128CBC: return "the AES-128 key"
            case .desECB: return "the DES key"
            }
        }
    }

    static func run(_ algorithm: Algorithm, encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8])
        throws(CryptoError) -> [UInt8]
    {
        guard key.count == algorithm.keyByteCount else {
            throw CryptoError(.badLength(what: algorithm.name, expected: algorithm.keyByteCount, got: key.count))
        }
        guard iv.count == algorithm.ivByteCount else {
            throw CryptoError(.badLength(what: "the IV", expected: algorithm.ivByteCount, got: iv.count))
        }
        let f = try LibCrypto.functions()
        let cipher: OpaquePointer?
        switch algorithm {
        case .aes128CBC: cipher = f.pointee.EVP_aes_128_cbc()
        case .desECB(let fetched): cipher = fetched.pointer
        }
        return try withContext(f) { context throws(CryptoError) in
            guard f.pointee.EVP_CipherInit_ex(context, cipher, nil, key, iv.isEmpty ? nil : iv, encrypt ? 1 : 0) == 1
            else { throw CryptoError(.failed("EVP_CipherInit_ex")) }
            return try update(f, context, input, decrypting: !encrypt)
        }
    }

    static func gcm(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8], tag: [UInt8]?)
        throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8])
    {
        guard key.count == AES128GCM.keyByteCount else {
            throw CryptoError(.badLength(what: "the AES-128 key", expected: AES128GCM.keyByteCount, got: key.count))
        }
        guard !iv.isEmpty else { throw CryptoError(.badLength(what: "the GCM IV", expected: 12, got: 0)) }
        let f = try LibCrypto.functions()
        return try withContext(f) { context throws(CryptoError) in
            let mode: Int32 = encrypt ? 1 : 0
            guard f.pointee.EVP_CipherInit_ex(context, f.pointee.EVP_aes_128_gcm(), nil, nil, nil, mode) == 1,
                f.pointee.EVP_CIPHER_CTX_ctrl(context, ccrypto_gcm_set_iv_length, Int32(iv.count), nil) == 1,
                f.pointee.EVP_CipherInit_ex(context, nil, nil, key, iv, mode) == 1
            else { throw CryptoError(.failed("EVP_CipherInit_ex")) }
            if var expected = tag {
                let set = expected.withUnsafeMutableBytes { bytes in
                    f.pointee.EVP_CIPHER_CTX_ctrl(context, ccrypto_gcm_set_tag, Int32(bytes.count), bytes.baseAddress)
                }
                guard set == 1 else { throw CryptoError(.failed("EVP_CIPHER_CTX_ctrl")) }
            }
            let output = try update(f, context, input, decrypting: !encrypt)
            guard encrypt else { return (output, []) }
            var produced = [UInt8](repeating: 0, count: AES128GCM.tagByteCount)
            let got = produced.withUnsafeMutableBytes { bytes in
                f.pointee.EVP_CIPHER_CTX_ctrl(context, ccrypto_gcm_get_tag, Int32(bytes.count), bytes.baseAddress)
            }
            guard got == 1 else { throw CryptoError(.failed("EVP_CIPHER_CTX_ctrl")) }
            return (output, produced)
        }
    }

    /// Feeds `input` through the initialised `context` and finishes it. A refused final block
    /// (padding, tag) is `.rejected`, and OpenSSL's error queue of this thread is emptied, so a
    /// later TLS call on it (libcurl shares the queue) does not read the stale error as its own.
    private static func update(
        _ f: UnsafePointer<ccrypto_functions>, _ context: OpaquePointer, _ input: [UInt8], decrypting: Bool
    ) throws(CryptoError) -> [UInt8] {
        // A block of room for the padding EVP adds or checks.
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        var finished: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { data in
                guard
                    f.pointee.EVP_CipherUpdate(
                        context, out.baseAddress!, &written, data.baseAddress ?? UnsafePointer(out.baseAddress!),
                        Int32(data.count)) == 1
                else { return false }
                return f.pointee.EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &finished) == 1
            }
        }
        guard ok else {
            f.pointee.ERR_clear_error()
            guard decrypting else { throw CryptoError(.failed("EVP_CipherUpdate")) }
            throw CryptoError(.rejected)
        }
        return Array(output[0..<Int(written + finished)])
    }

    private static func withContext<T>(
        _ f: UnsafePointer<ccrypto_functions>, _ body: (OpaquePointer) throws(CryptoError) -> T
    ) throws(CryptoError) -> T {
        guard let context = f.pointee.EVP_CIPHER_CTX_new() else { throw CryptoError(.failed("EVP_CIPHER_CTX_new")) }
        defer { f.pointee.EVP_CIPHER_CTX_free(context) }
        return try body(context)
    }
}

/// A cipher fetched from a library context; fetched once and never freed, usable from any thread.
struct FetchedCipher: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The library context that holds OpenSSL's legacy provider (and the default one beside it:
/// loading a provider into a context turns off that context's implicit default).
private enum LegacyContext {
    private static let des = Result { () throws(CryptoError) in try fetchDES() }

    static func desECB() throws(CryptoError) -> FetchedCipher { try des.get() }

    private static func fetchDES() throws(CryptoError) -> FetchedCipher {
        let f = try LibCrypto.functions()
        guard let context = f.pointee.OSSL_LIB_CTX_new() else { throw CryptoError(.failed("OSSL_LIB_CTX_new")) }
        for provider in ["legacy", "default"] {
            guard f.pointee.OSSL_PROVIDER_load(context, provider) != nil else {
                f.pointee.ERR_clear_error()
                throw CryptoError(.unavailable("cannot load OpenSSL's \(provider) provider (single DES needs it)"))
            }
        }
        guard let cipher = f.pointee.EVP_CIPHER_fetch(context, "DES-ECB", nil) else {
            f.pointee.ERR_clear_error()
            throw CryptoError(.unavailable("OpenSSL's legacy provider has no DES-ECB"))
        }
        return FetchedCipher(pointer: cipher)
    }
}
