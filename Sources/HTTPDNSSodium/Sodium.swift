import CSodium
import Glibc
import HTTPDNSSystem

/// libsodium, loaded on first use: `libsodium.so.23` opened with dlopen, its functions resolved
/// into one table, and `sodium_init` run, once per process, from whichever thread comes first.
public enum Sodium {
    /// The ABI `sodium.h` describes.
    public static let soname = "libsodium.so.23"

    /// The outcome of the first use, kept: a library that could not be loaded is not tried again
    /// until the daemon restarts. (A `static let` initialiser runs once, thread-safely.)
    private static let loaded = Result { () throws(DynamicLibraryError) in try LoadedSodium.load() }

    /// Loads libsodium if that has not been done, or says why it cannot be. The fleet calls it
    /// before it makes a key, so that a missing library is an error it reports, not a trap.
    public static func load() throws(DynamicLibraryError) { _ = try loaded.get() }

    /// Every function this target calls (`functions.pointee.sodium_init()`). Reached only once a
    /// key exists or through `load()`'s callers; without the library that is a programming error.
    static var functions: UnsafePointer<csodium_functions> {
        switch loaded {
        case .success(let library): return library.functions
        case .failure(let error): preconditionFailure("\(error); callers check Sodium.load() first")
        }
    }

    /// `count` bytes from the kernel's CSPRNG (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        let f = functions
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { f.pointee.randombytes_buf($0.baseAddress!, $0.count) }
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

    /// Overwrites `bytes` with zeros in a way the optimiser may not drop (glibc's
    /// `explicit_bzero`, what `sodium_memzero` does): it needs no libsodium, so secrets read
    /// before the library is loaded are wiped all the same.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
        }
    }
}

/// The resolved table; written once, before it is published, and only read afterwards.
private struct LoadedSodium: @unchecked Sendable {
    let functions: UnsafePointer<csodium_functions>

    static func load() throws(DynamicLibraryError) -> LoadedSodium {
        let library = try DynamicLibrary.open(Sodium.soname)
        let table = UnsafeMutablePointer<csodium_functions>.allocate(capacity: 1)
        if let missing = csodium_resolve(library.handle, table) {
            table.deallocate()
            throw library.missing(String(cString: missing))
        }
        // Thread-safe and idempotent; fails only when the kernel gives no randomness at all, in
        // which case nothing here could be sealed safely.
        guard table.pointee.sodium_init() >= 0 else {
            table.deallocate()
            throw DynamicLibraryError(library: Sodium.soname, reason: "sodium_init failed: no source of randomness")
        }
        return LoadedSodium(functions: UnsafePointer(table))
    }
}
