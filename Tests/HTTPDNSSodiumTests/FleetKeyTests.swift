import Glibc
import HTTPDNSSodium
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

struct FleetKeyTests {
    static let hex = "8f2a5c0e9b1d47a3c6e5f0b2d4a69871ec3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f"

    static func key(_ text: String = hex) throws -> FleetKey {
        FleetKey(master: try FleetKey.parse(hex: Array(text.utf8)))
    }

    @Test func sealedValuesOpenWithTheSameKeyKindAndName() throws {
        let key = try Self.key()
        let plaintext = Array("sid=abc; api.example.com 203.0.113.10".utf8)
        let sealed = key.seal(plaintext, kind: "cookie", name: "k1")
        #expect(sealed.count == plaintext.count + XChaCha20Poly1305.overhead)
        #expect(key.open(sealed, kind: "cookie", name: "k1") == plaintext)
        // A second key parsed from the same text is the same key.
        #expect(try Self.key().open(sealed, kind: "cookie", name: "k1") == plaintext)
        #expect(key.open(key.seal([], kind: "k", name: "n"), kind: "k", name: "n") == [])
    }

    @Test func sealingTwiceGivesUnrelatedBytes() throws {
        let key = try Self.key()
        let plaintext = Array("same value".utf8)
        let first = key.seal(plaintext, kind: "dns", name: "x")
        let second = key.seal(plaintext, kind: "dns", name: "x")
        #expect(first != second)
        #expect(first.prefix(XChaCha20Poly1305.nonceByteCount) != second.prefix(XChaCha20Poly1305.nonceByteCount))
    }

    @Test func nothingElseOpensASealedValue() throws {
        let key = try Self.key()
        let sealed = key.seal(Array("secret".utf8), kind: "cookie", name: "k1")
        let otherKey = try Self.key(String(Self.hex.reversed()))
        #expect(otherKey.open(sealed, kind: "cookie", name: "k1") == nil)
        #expect(key.open(sealed, kind: "cookie", name: "k2") == nil, "moved to another key name")
        #expect(key.open(sealed, kind: "dns", name: "k1") == nil, "presented as another kind")
        // Kind and name are length-prefixed: shifting bytes between them changes the binding.
        #expect(key.open(sealed, kind: "cookiek", name: "1") == nil)
        for index in [0, XChaCha20Poly1305.nonceByteCount, sealed.count - 1] {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(key.open(tampered, kind: "cookie", name: "k1") == nil, "byte \(index) flipped")
        }
        #expect(key.open(Array(sealed.dropLast()), kind: "cookie", name: "k1") == nil)
        #expect(key.open(Array(sealed.prefix(10)), kind: "cookie", name: "k1") == nil)
        #expect(key.open([], kind: "cookie", name: "k1") == nil)
    }

    @Test func sealingUsesASubkeyNotTheMasterKey() throws {
        let master = try FleetKey.parse(hex: Array(Self.hex.utf8))
        let key = FleetKey(master: master)
        let sealed = key.seal(Array("v".utf8), kind: "k", name: "n")
        // The raw master key cannot open it with any associated data the fleet could use.
        #expect(XChaCha20Poly1305.open(sealed, associatedData: [], key: master) == nil)
        // Nor can the naming subkey or another context's subkey 1.
        for (id, context) in [(UInt64(2), KeyDerivationContext("httpdnsf")), (1, KeyDerivationContext("otherctx"))] {
            let subkey = master.derive(subkey: id, context: context)
            let reSealed = XChaCha20Poly1305.seal(Array("v".utf8), associatedData: [], key: subkey)
            #expect(key.open(reSealed, kind: "k", name: "n") == nil)
        }
    }

    @Test func hashedNamesAreStableKeyedAndSeparatedByPurpose() throws {
        let key = try Self.key()
        let name = key.hashedName(purpose: "dns", Array("api.example.com".utf8))
        #expect(name.count == 32 && name.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(try Self.key().hashedName(purpose: "dns", Array("api.example.com".utf8)) == name)
        #expect(key.hashedName(purpose: "dns", Array("api.example.org".utf8)) != name)
        #expect(key.hashedName(purpose: "cookie", Array("api.example.com".utf8)) != name)
        let other = try Self.key(String(Self.hex.reversed()))
        #expect(other.hashedName(purpose: "dns", Array("api.example.com".utf8)) != name)
        #expect(!name.contains("example"))
    }

    @Test func keyTextMustBeExactly64HexCharactersWithAnOptionalNewline() throws {
        #expect(throws: Never.self) { try FleetKey.parse(hex: Array((Self.hex + "\n").utf8)) }
        #expect(throws: Never.self) { try FleetKey.parse(hex: Array(Self.hex.uppercased().utf8)) }
        // Upper and lower case are the same key.
        let upper = FleetKey(master: try FleetKey.parse(hex: Array(Self.hex.uppercased().utf8)))
        let sealed = try Self.key().seal([1, 2, 3], kind: "k", name: "n")
        #expect(upper.open(sealed, kind: "k", name: "n") == [1, 2, 3])

        let cases: [(String, FleetKeyError.Problem)] = [
            (String(Self.hex.dropLast()), .length(found: 63)),
            (Self.hex + "0", .length(found: 65)),
            (Self.hex + "\n\n", .length(found: 65)),
            (Self.hex + "\r\n", .length(found: 65)),
            (" " + Self.hex.dropLast(), .notHexadecimal(position: 1)),
            (String(Self.hex.prefix(11)) + "g" + Self.hex.dropFirst(12), .notHexadecimal(position: 12)),
            ("", .length(found: 0)),
        ]
        for (text, problem) in cases {
            let error = try #require(throws: FleetKeyError.Problem.self) { try FleetKey.parse(hex: Array(text.utf8)) }
            #expect(error == problem, "\(text.debugDescription)")
        }
    }

    @Test func keyFilesAreReadWithTheirPermissionsChecked() throws {
        let directory = TemporaryDirectory(prefix: "fkey")
        let path = directory.file("fleet.key")
        writeFile(Self.hex + "\n", to: path, mode: 0o600)
        let key = try FleetKey.load(path: path)
        #expect(key.open(try Self.key().seal([9], kind: "k", name: "n"), kind: "k", name: "n") == [9])

        chmod(path, 0o640)  // root:httpdnsd 0640 is fine
        #expect(throws: Never.self) { try FleetKey.load(path: path) }

        chmod(path, 0o644)
        let readable = try #require(throws: FleetKeyError.self) { try FleetKey.load(path: path) }
        #expect(readable.problem == .file(SecretFileError(path: path, reason: .accessibleByOthers(mode: 0o100644))))
        #expect(readable.description.contains("mode 644"))

        chmod(path, 0o602)
        #expect(throws: FleetKeyError.self) { try FleetKey.load(path: path) }

        let missing = try #require(throws: FleetKeyError.self) { try FleetKey.load(path: directory.file("none")) }
        #expect(missing.description.contains("No such file"))

        let notAFile = try #require(throws: FleetKeyError.self) { try FleetKey.load(path: directory.path) }
        #expect(notAFile.problem == .file(SecretFileError(path: directory.path, reason: .notRegularFile)))
    }

    @Test func errorsAndDescriptionsNeverShowKeyMaterial() throws {
        let directory = TemporaryDirectory(prefix: "fkey")
        let path = directory.file("fleet.key")
        let almost = String(Self.hex.dropLast()) + "z"
        writeFile(almost, to: path, mode: 0o600)
        let error = try #require(throws: FleetKeyError.self) { try FleetKey.load(path: path) }
        #expect(error.problem == .notHexadecimal(position: 64))
        #expect(!error.description.contains(String(Self.hex.prefix(16))))
        let secret = try FleetKey.parse(hex: Array(Self.hex.utf8))
        #expect("\(secret)" == "<redacted>" && String(reflecting: secret) == "<redacted>")
    }
}
