import CSodium
import Glibc

/// 32 secret bytes: a symmetric key for sealing, hashing or deriving subkeys.
///
/// The bytes live in memory of their own that is zeroed (`explicit_bzero`) when the key is
/// released, and no textual form of the key shows them. The contents never change after
/// `init`, so a key may be shared between threads.
public final class SecretKey: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    // @unchecked: `storage` is written only in init and read-only afterwards.
    /// Every key here is 32 bytes: XChaCha20-Poly1305's key size, `crypto_kdf`'s master key
    /// size, and a full-strength BLAKE2b key.
    public static let byteCount = 32

    private let storage: UnsafeMutableRawBufferPointer

    /// Copies exactly `byteCount` bytes; nil for any other length. The caller wipes its copy.
    public init?(copying bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.byteCount else { return nil }
        storage = .allocate(byteCount: Self.byteCount, alignment: 16)
        storage.copyMemory(from: bytes)
    }

    /// A fresh random key (tests and tools; the fleet key comes from a file).
    public static func random() -> SecretKey {
        var bytes = Sodium.randomBytes(byteCount)
        defer { Sodium.wipe(&bytes) }
        return bytes.withUnsafeBytes { SecretKey(copying: $0)! }
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// The subkey number `id` of this master key in `context` (`crypto_kdf_derive_from_key`).
    /// Subkeys with different ids or contexts are independent: knowing one says nothing about
    /// the master key or the others.
    public func derive(subkey id: UInt64, context: KeyDerivationContext) -> SecretKey {
        var bytes = [UInt8](repeating: 0, count: Self.byteCount)
        defer { Sodium.wipe(&bytes) }
        let f = Sodium.functions
        let rc = context.bytes.withUnsafeBufferPointer { contextBytes in
            bytes.withUnsafeMutableBytes { out in
                withBytes { master in
                    contextBytes.withMemoryRebound(to: CChar.self) { ctx in
                        f.pointee.crypto_kdf_derive_from_key(
                            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count, id, ctx.baseAddress!,
                            master.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        precondition(rc == 0, "crypto_kdf_derive_from_key rejected a 32-byte subkey")
        return bytes.withUnsafeBytes { SecretKey(copying: $0)! }
    }

    /// Lends the key's bytes to `body`; they must not escape it.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}

/// The 8-byte context of `crypto_kdf`: subkeys derived for one purpose under one context never
/// equal subkeys derived under another, even with the same id.
public struct KeyDerivationContext: Sendable, Equatable {
    /// `crypto_kdf_CONTEXTBYTES`.
    public static let byteCount = 8

    let bytes: [UInt8]

    /// Exactly 8 ASCII characters; anything else is a programming error.
    public init(_ text: StaticString) {
        precondition(text.utf8CodeUnitCount == Self.byteCount, "a crypto_kdf context is 8 bytes")
        bytes = Array(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
