import HTTPDNSCore
import HTTPDNSCrypto

/// The providers' ciphers from OpenSSL's libcrypto (`HTTPDNSCrypto`). A library that cannot be
/// loaded is a transport failure of the upstream that needs it (it cannot be asked at all); a
/// refused decryption is a malformed answer.
struct LibCryptoCiphers: ProviderCiphers {
    func desECB(encrypt: Bool, _ input: [UInt8], key: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return encrypt ? try DESECB.encrypt(input, key: key) : try DESECB.decrypt(input, key: key)
        } catch {
            throw Self.upstreamError(error)
        }
    }

    func aes128CBC(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return encrypt
                ? try AES128CBC.encrypt(input, key: key, iv: iv) : try AES128CBC.decrypt(input, key: key, iv: iv)
        } catch {
            throw Self.upstreamError(error)
        }
    }

    func aes128GCM(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do throws(CryptoError) {
            if encrypt {
                let sealed = try AES128GCM.seal(input, key: key, iv: iv)
                return sealed.ciphertext + sealed.tag
            }
            guard input.count >= AES128GCM.tagByteCount else {
                throw CryptoError(
                    .badLength(what: "the sealed text", expected: AES128GCM.tagByteCount, got: input.count))
            }
            let split = input.count - AES128GCM.tagByteCount
            return try AES128GCM.open(Array(input[..<split]), tag: Array(input[split...]), key: key, iv: iv)
        } catch {
            throw Self.upstreamError(error)
        }
    }

    func hmacSHA256(key: [UInt8], message: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return try HMACSHA256.authenticationCode(key: key, message: message)
        } catch {
            throw Self.upstreamError(error)
        }
    }

    func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }

    private static func upstreamError(_ error: CryptoError) -> UpstreamError {
        switch error.code {
        case .unavailable(let reason): return UpstreamError(.transport(reason))
        case .rejected, .badLength, .failed: return UpstreamError(.malformed(error.description))
        }
    }
}
