import HTTPDNSSystem

/// The fleet key (`KeyFile=`): the 32-byte secret every machine of a fleet shares, and the two
/// independent subkeys derived from it with `crypto_kdf`: one seals values, one names keys. The
/// master key itself is wiped as soon as the subkeys exist.
///
/// Sealing binds every value to what it is (`kind`) and where it is stored (`name`) through the
/// AEAD's associated data, so a value copied to another key, or presented as another kind of
/// record, fails to open. Names are keyed BLAKE2b hashes, so Redis never sees a host name or a
/// cookie name, and nobody without the key can test a guess against them.
public final class FleetKey: Sendable {
    /// The `crypto_kdf` context of every fleet subkey.
    static let context = KeyDerivationContext("httpdnsf")
    /// Subkey numbers; never reuse one for another purpose.
    static let sealingSubkey: UInt64 = 1
    static let namingSubkey: UInt64 = 2
    /// Bytes of a hashed name: 128 bits keep collisions out of reach for any number of names a
    /// fleet will ever hold, at 32 hexadecimal characters per key.
    public static let hashedNameByteCount = 16
    /// Version tag in the associated data: a future format can never open today's values.
    static let associatedDataTag: [UInt8] = Array("httpdnsd-fleet-1".utf8)

    private let sealingKey: SecretKey
    private let namingKey: SecretKey

    /// Derives the subkeys of `master`.
    public init(master: SecretKey) {
        sealingKey = master.derive(subkey: Self.sealingSubkey, context: Self.context)
        namingKey = master.derive(subkey: Self.namingSubkey, context: Self.context)
    }

    /// Reads the key file: exactly 64 hexadecimal characters (what `openssl rand -hex 32`
    /// writes), optionally followed by one newline, in a file other users cannot access.
    public static func load(path: String) throws(FleetKeyError) -> FleetKey {
        var bytes: [UInt8]
        do {
            bytes = try Files.readSecret(path, limit: 4096)
        } catch {
            throw FleetKeyError(path: path, problem: .file(error))
        }
        defer { Sodium.wipe(&bytes) }
        do {
            let master = try parse(hex: bytes)
            return FleetKey(master: master)
        } catch {
            throw FleetKeyError(path: path, problem: error)
        }
    }

    /// The key written as 64 hexadecimal characters and an optional trailing newline.
    public static func parse(hex text: [UInt8]) throws(FleetKeyError.Problem) -> SecretKey {
        var digits = text[...]
        if digits.last == UInt8(ascii: "\n") { digits = digits.dropLast() }
        let expected = SecretKey.byteCount * 2
        guard digits.count == expected else { throw .length(found: digits.count) }
        var key = [UInt8](repeating: 0, count: SecretKey.byteCount)
        defer { Sodium.wipe(&key) }
        for (offset, pair) in stride(from: digits.startIndex, to: digits.endIndex, by: 2).enumerated() {
            guard let high = hexValue(digits[pair]), let low = hexValue(digits[pair + 1]) else {
                let bad = hexValue(digits[pair]) == nil ? pair : pair + 1
                throw .notHexadecimal(position: bad - digits.startIndex + 1)
            }
            key[offset] = high << 4 | low
        }
        return key.withUnsafeBytes { SecretKey(copying: $0)! }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    // MARK: sealing

    /// Seals `plaintext` as a value of `kind` stored under `name` (a random nonce each time, so
    /// sealing the same value twice gives unrelated bytes).
    public func seal(_ plaintext: [UInt8], kind: String, name: String) -> [UInt8] {
        XChaCha20Poly1305.seal(plaintext, associatedData: Self.associatedData(kind: kind, name: name), key: sealingKey)
    }

    /// The plaintext of a value sealed with `seal(_:kind:name:)` under the same fleet key, kind
    /// and name; nil for anything else (another fleet key, another key name or kind, tampering).
    public func open(_ sealed: [UInt8], kind: String, name: String) -> [UInt8]? {
        XChaCha20Poly1305.open(sealed, associatedData: Self.associatedData(kind: kind, name: name), key: sealingKey)
    }

    /// Tag, then kind and name each preceded by its length, so that no two (kind, name) pairs
    /// give the same bytes.
    static func associatedData(kind: String, name: String) -> [UInt8] {
        var data = associatedDataTag
        for part in [kind, name] {
            let bytes = Array(part.utf8)
            data.append(UInt8(truncatingIfNeeded: bytes.count >> 8))
            data.append(UInt8(truncatingIfNeeded: bytes.count))
            data.append(contentsOf: bytes)
        }
        return data
    }

    // MARK: naming

    /// The keyed hash of `material` for names of `purpose`, as 32 lowercase hexadecimal
    /// characters. The purpose separates hash domains (a cookie and a host with the same bytes
    /// get unrelated names).
    public func hashedName(purpose: String, _ material: [UInt8]) -> String {
        var message = Array(purpose.utf8)
        message.append(0)
        message.append(contentsOf: material)
        return Sodium.hex(KeyedHash.hash(message, key: namingKey, length: Self.hashedNameByteCount))
    }
}

/// Why the fleet key could not be loaded. The message names the file and the problem, never
/// a byte of the key.
public struct FleetKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public enum Problem: Error, Sendable, Equatable {
        /// The file could not be read, or its permissions let other users read it.
        case file(SecretFileError)
        /// Not 64 characters (after one optional trailing newline).
        case length(found: Int)
        /// The character at this 1-based position is not a hexadecimal digit.
        case notHexadecimal(position: Int)
    }

    public let path: String
    public let problem: Problem

    public init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    public var description: String {
        let format = "64 hexadecimal characters, as `openssl rand -hex 32` writes"
        switch problem {
        case .file(let error): return error.description
        case .length(let found): return "\(path): expected \(format), found \(found) characters"
        case .notHexadecimal(let position):
            return "\(path): character \(position) is not hexadecimal (expected \(format))"
        }
    }
}
