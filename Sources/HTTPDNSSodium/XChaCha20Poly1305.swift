import CSodium

/// Authenticated encryption with XChaCha20-Poly1305 (IETF construction, libsodium's
/// `crypto_aead_xchacha20poly1305_ietf_*`).
///
/// Its 192-bit nonce is large enough to be drawn at random for every message without any
/// bookkeeping (the birthday bound is far beyond any realistic number of messages), which is
/// why it is used rather than the 96-bit IETF ChaCha20-Poly1305.
public enum XChaCha20Poly1305 {
    /// `crypto_aead_xchacha20poly1305_ietf_NPUBBYTES`.
    public static let nonceByteCount = 24
    /// `crypto_aead_xchacha20poly1305_ietf_ABYTES`: the Poly1305 tag.
    public static let tagByteCount = 16
    /// What sealing adds to a message: the nonce in front, the tag behind.
    public static let overhead = nonceByteCount + tagByteCount

    /// `nonce || ciphertext || tag` for `plaintext`, authenticating `associatedData` too (which
    /// is not stored: whoever opens must supply the same bytes).
    public static func seal(_ plaintext: [UInt8], associatedData: [UInt8], key: SecretKey) -> [UInt8] {
        let f = Sodium.functions
        let nonce = Sodium.randomBytes(nonceByteCount)
        var sealed = [UInt8](repeating: 0, count: overhead + plaintext.count)
        var written: UInt64 = 0
        let rc = key.withBytes { keyBytes in
            sealed.withUnsafeMutableBufferPointer { out in
                out.baseAddress!.update(from: nonce, count: nonceByteCount)
                return f.pointee.crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.baseAddress! + nonceByteCount, &written, plaintext, UInt64(plaintext.count),
                    associatedData, UInt64(associatedData.count), nil, nonce,
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        precondition(rc == 0 && Int(written) == plaintext.count + tagByteCount, "XChaCha20-Poly1305 seal failed")
        return sealed
    }

    /// The plaintext of `sealed`, or nil when it is too short, was sealed under another key or
    /// other associated data, or was altered in any way.
    public static func open(_ sealed: [UInt8], associatedData: [UInt8], key: SecretKey) -> [UInt8]? {
        guard sealed.count >= overhead else { return nil }
        let f = Sodium.functions
        var plaintext = [UInt8](repeating: 0, count: sealed.count - overhead)
        var written: UInt64 = 0
        let rc = key.withBytes { keyBytes in
            sealed.withUnsafeBufferPointer { input in
                plaintext.withUnsafeMutableBufferPointer { out in
                    f.pointee.crypto_aead_xchacha20poly1305_ietf_decrypt(
                        out.baseAddress ?? UnsafeMutablePointer(mutating: input.baseAddress!), &written, nil,
                        input.baseAddress! + nonceByteCount, UInt64(sealed.count - nonceByteCount),
                        associatedData, UInt64(associatedData.count), input.baseAddress!,
                        keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0, Int(written) == plaintext.count else { return nil }
        return plaintext
    }
}
