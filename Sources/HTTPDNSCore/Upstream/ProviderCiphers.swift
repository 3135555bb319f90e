/// The ciphers and MACs the providers' paid forms use (Tencent's encrypted names, Alibaba v2's
/// signatures and encrypted parameters). Core does no cryptography of its own: the daemon supplies these from OpenSSL's
/// libcrypto, and a failure (the library missing, a key of the wrong length, an answer that does
/// not decrypt) is an `UpstreamError` for the upstream that needed it.
public protocol ProviderCiphers: Sendable {
    /// Single DES, ECB mode, PKCS#5 padding (8-byte key).
    func desECB(encrypt: Bool, _ input: [UInt8], key: [UInt8]) throws(UpstreamError) -> [UInt8]
    /// AES-128, CBC mode, PKCS#7 padding (16-byte key and IV).
    func aes128CBC(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8]
    /// AES-128, GCM mode, a 16-byte tag (16-byte key, any IV length, no additional data):
    /// encrypting gives the ciphertext with the tag after it, decrypting takes that form and
    /// refuses it when the tag does not authenticate it.
    func aes128GCM(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8]
    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    func hmacSHA256(key: [UInt8], message: [UInt8]) throws(UpstreamError) -> [UInt8]
    /// `count` unpredictable bytes, for IVs.
    func randomBytes(_ count: Int) -> [UInt8]
}

/// Lowercase hexadecimal, the form the providers put ciphertext and signatures in.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of hexadecimal text (either case, surrounding whitespace ignored), nil if it is not.
    static func decode<Bytes: Collection<UInt8>>(_ text: Bytes) -> [UInt8]? {
        let digits = trimmed(Array(text))
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return Array(bytes[first...last])
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Standard base64 (RFC 4648 section 4), the form Alibaba v2 puts its encrypted answers in.
enum Base64 {
    /// The bytes of base64 text (padding optional, surrounding whitespace ignored), nil if it is not.
    static func decode(_ text: String) -> [UInt8]? {
        var digits = Hex.trimmed(Array(text.utf8))
        while digits.last == UInt8(ascii: "=") { digits.removeLast() }
        guard digits.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for digit in digits {
            guard let value = value(digit) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return digit - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return digit - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
