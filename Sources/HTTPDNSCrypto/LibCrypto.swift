import CCrypto
import HTTPDNSSystem

/// OpenSSL's libcrypto, loaded on first use: `libcrypto.so.3` opened with dlopen and its functions
/// resolved into one table, once per process, from whichever thread comes first. (libcurl's TLS
/// maps the same library when an https upstream is used; dlopen then returns that copy.)
public enum LibCrypto {
    /// The ABI the OpenSSL 3 headers describe.
    public static let soname = "libcrypto.so.3"

    /// The outcome of the first use, kept: a library that could not be loaded is not tried again
    /// until the daemon restarts. (A `static let` initialiser runs once, thread-safely.)
    private static let loaded = Result { () throws(DynamicLibraryError) in try LoadedCrypto.load() }

    /// Loads libcrypto if that has not been done, or says why it cannot be.
    public static func load() throws(DynamicLibraryError) { _ = try loaded.get() }

    /// Every function this target calls, or why there are none.
    static func functions() throws(CryptoError) -> UnsafePointer<ccrypto_functions> {
        switch loaded {
        case .success(let library): return library.functions
        case .failure(let error): throw CryptoError(.unavailable(error.description))
        }
    }
}

/// The resolved table; written once, before it is published, and only read afterwards.
private struct LoadedCrypto: @unchecked Sendable {
    let functions: UnsafePointer<ccrypto_functions>

    static func load() throws(DynamicLibraryError) -> LoadedCrypto {
        let library = try DynamicLibrary.open(LibCrypto.soname)
        let table = UnsafeMutablePointer<ccrypto_functions>.allocate(capacity: 1)
        if let missing = ccrypto_resolve(library.handle, table) {
            table.deallocate()
            throw library.missing(String(cString: missing))
        }
        return LoadedCrypto(functions: UnsafePointer(table))
    }
}

/// Why a cryptographic operation gave no result. The description never holds key or data bytes.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// libcrypto (or, for DES, OpenSSL's legacy provider) cannot be loaded: the reason.
        case unavailable(String)
        /// A key or IV of the wrong length for the algorithm: what it needs and what it got.
        case badLength(what: String, expected: Int, got: Int)
        /// Decryption refused the input: a wrong key, bad padding, a length that is no whole
        /// number of blocks, or (GCM) a tag that does not authenticate it.
        case rejected
        /// libcrypto failed where it should not (out of memory): the function.
        case failed(String)
    }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var description: String {
        switch code {
        case .unavailable(let reason): return reason
        case .badLength(let what, let expected, let got): return "\(what) is \(got) bytes, not \(expected)"
        case .rejected: return "decryption failed (wrong key or altered data)"
        case .failed(let function): return "\(function) failed"
        }
    }
}
