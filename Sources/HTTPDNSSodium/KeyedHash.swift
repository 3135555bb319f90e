import CSodium

/// BLAKE2b keyed hashing (`crypto_generichash` with a key): a pseudorandom function, so without
/// the key nobody can compute the hash of a guessed input or learn anything from the output.
public enum KeyedHash {
    /// `crypto_generichash_BYTES_MIN`.
    public static let minimumLength = 16
    /// `crypto_generichash_BYTES_MAX`.
    public static let maximumLength = 64

    /// The `length`-byte hash of `message` under `key`.
    public static func hash(_ message: [UInt8], key: SecretKey, length: Int) -> [UInt8] {
        precondition((minimumLength...maximumLength).contains(length), "crypto_generichash output length")
        let f = Sodium.functions
        var out = [UInt8](repeating: 0, count: length)
        let rc = key.withBytes { keyBytes in
            out.withUnsafeMutableBufferPointer { buffer in
                f.pointee.crypto_generichash(
                    buffer.baseAddress!, length, message, UInt64(message.count),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
            }
        }
        precondition(rc == 0, "crypto_generichash failed")
        return out
    }
}
