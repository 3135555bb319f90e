import HTTPDNSCrypto
import Testing

/// Literal vectors computed outside this project: HMAC with Python's `hmac` (and RFC 4231's test
/// case 2), AES with `/usr/bin/python3`'s `cryptography`, DES with
/// `openssl enc -des-ecb -provider legacy -provider default`.
struct CipherVectorTests {
    static let aesKey = Array("0123456789abcdef".utf8)
    static let cbcIV = Array(0..<16).map(UInt8.init)
    static let gcmIV = Array(0..<12).map(UInt8.init)
    static let desKey = Array("12345678".utf8)

    @Test func hmacSHA256MatchesRFC4231AndPython() throws {
        #expect(
            hex(
                try HMACSHA256.authenticationCode(
                    key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let key = try #require(bytes(hex: "0123456789abcdef0123456789abcdef"))
        let message = Array("dn=www.example.com&exp=1764000000&id=100000&m=0&q=4,6&v=1.0".utf8)
        #expect(
            hex(try HMACSHA256.authenticationCode(key: key, message: message))
                == "5fe3f86e2b77aca4cc62d4ad9b4bc217da38269d42c113aad39af9e5d2657fa2")
        #expect(
            hex(try HMACSHA256.authenticationCode(key: Array("key".utf8), message: []))
                == "5d5d139563c95b5967b9bd9a8c9b233a9dedb45072794cd232dc1b74832607d0")
    }

    @Test func aes128CBCWithPKCS7RoundTripsThePythonVectors() throws {
        for (plaintext, expected) in [
            ("www.example.com", "c76e0a8818928ce7aa8b99f52a5d3fff"),
            // A whole block gets a whole block of padding.
            ("0123456789abcdef", "59b24fcf01976acae963981ba6573d33b56175f66382014d16cc41f289d2b779"),
        ] {
            let ciphertext = try AES128CBC.encrypt(Array(plaintext.utf8), key: Self.aesKey, iv: Self.cbcIV)
            #expect(hex(ciphertext) == expected)
            let decrypted = try AES128CBC.decrypt(try #require(bytes(hex: expected)), key: Self.aesKey, iv: Self.cbcIV)
            #expect(decrypted == Array(plaintext.utf8))
        }
    }

    @Test func aes128GCMSealsAsPythonDoesAndRefusesAnAlteredMessage() throws {
        let plaintext = Array(#"{"dn":"www.example.com","q":"4"}"#.utf8)
        let sealed = try AES128GCM.seal(plaintext, key: Self.aesKey, iv: Self.gcmIV)
        #expect(hex(sealed.ciphertext) == "861da0733c4e19419f51297fb8fadd5d6cb2799968de68675518c8c9cd9f8911")
        #expect(hex(sealed.tag) == "f94e53608e3ab4ad9b8a13ccfc1e239e")
        #expect(try AES128GCM.open(sealed.ciphertext, tag: sealed.tag, key: Self.aesKey, iv: Self.gcmIV) == plaintext)

        var altered = sealed.ciphertext
        altered[0] ^= 1
        #expect(throws: CryptoError(.rejected)) {
            try AES128GCM.open(altered, tag: sealed.tag, key: Self.aesKey, iv: Self.gcmIV)
        }
        var wrongTag = sealed.tag
        wrongTag[15] ^= 0x80
        #expect(throws: CryptoError(.rejected)) {
            try AES128GCM.open(sealed.ciphertext, tag: wrongTag, key: Self.aesKey, iv: Self.gcmIV)
        }
    }

    @Test func singleDESECBMatchesOpenSSLsLegacyProvider() throws {
        for (plaintext, expected) in [
            ("www.example.com", "dd6990e5afc11b7fbc306acac03ec507"),
            ("12345678", "96d0028878d58c89feb959b7d4642fcb"),
        ] {
            #expect(hex(try DESECB.encrypt(Array(plaintext.utf8), key: Self.desKey)) == expected)
            #expect(try DESECB.decrypt(try #require(bytes(hex: expected)), key: Self.desKey) == Array(plaintext.utf8))
        }
    }

    @Test func wrongKeysAndBrokenCiphertextAreErrorsNotTraps() throws {
        #expect(throws: CryptoError(.badLength(what: "the DES key", expected: 8, got: 16))) {
            try DESECB.encrypt([1], key: Self.aesKey)
        }
        #expect(throws: CryptoError(.badLength(what: "the AES-128 key", expected: 16, got: 8))) {
            try AES128CBC.encrypt([1], key: Self.desKey, iv: Self.cbcIV)
        }
        #expect(throws: CryptoError(.badLength(what: "the IV", expected: 16, got: 12))) {
            try AES128CBC.decrypt([UInt8](repeating: 0, count: 16), key: Self.aesKey, iv: Self.gcmIV)
        }
        // Not a whole number of blocks, and (another key) padding that does not check.
        #expect(throws: CryptoError(.rejected)) {
            try AES128CBC.decrypt([1, 2, 3], key: Self.aesKey, iv: Self.cbcIV)
        }
        let ciphertext = try #require(bytes(hex: "dd6990e5afc11b7fbc306acac03ec507"))
        let other = try? DESECB.decrypt(ciphertext, key: Array("87654321".utf8))
        #expect(other != Array("www.example.com".utf8))
        // The library is still usable after refusals (nothing left on the error queue matters).
        #expect(try DESECB.decrypt(ciphertext, key: Self.desKey) == Array("www.example.com".utf8))
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

func bytes(hex text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
            return nil
        }
        out.append(byte)
    }
    return out
}
