import CSodium

/// libsodium's process-wide state, set up exactly once.
public enum Sodium {
    /// `sodium_init()` is thread-safe and idempotent, but it must have run before any other call;
    /// a `static let` initialiser runs once, on first use, from whichever thread comes first.
    private static let initialised: Bool = sodium_init() >= 0

    /// Makes sure libsodium is initialised. It only fails when the kernel gives no randomness
    /// at all, in which case nothing here could be sealed safely.
    static func ensureInitialised() {
        precondition(initialised, "sodium_init failed: no source of randomness")
    }

    /// `count` bytes from the kernel's CSPRNG (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialised()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }

    /// `byteCount` random bytes as lowercase hexadecimal (tokens, ids).
    public static func randomHex(byteCount: Int) -> String { hex(randomBytes(byteCount)) }

    /// Lowercase hexadecimal, two digits per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// Overwrites `bytes` with zeros in a way the optimiser may not drop (`sodium_memzero`).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
        }
    }
}
