import CCurl
import HTTPDNSSystem

/// libcurl, loaded on first use: `libcurl.so.4` opened with dlopen, its functions resolved into
/// one table, and `curl_global_init` run, once per process, from whichever thread comes first.
struct LibCurl: @unchecked Sendable {
    // @unchecked: the table is written once, before it is published, and only read afterwards.
    /// The ABI `curl.h` describes.
    static let soname = "libcurl.so.4"

    /// Every function HTTPDNSCurl calls (`functions.pointee.curl_easy_init()`); the variadic
    /// ones through the shim's typed wrappers, which take the table.
    let functions: UnsafePointer<ccurl_functions>

    /// The outcome of the first use, kept: a library that could not be loaded is not tried again
    /// until the daemon restarts. (A `static let` initialiser runs once, thread-safely.)
    private static let loaded = Result { () throws(DynamicLibraryError) in try load() }

    /// The loaded library, or why it cannot be loaded.
    static func shared() throws(DynamicLibraryError) -> LibCurl { try loaded.get() }

    private static func load() throws(DynamicLibraryError) -> LibCurl {
        let library = try DynamicLibrary.open(soname)
        let table = UnsafeMutablePointer<ccurl_functions>.allocate(capacity: 1)
        if let missing = ccurl_resolve(library.handle, table) {
            table.deallocate()
            throw library.missing(String(cString: missing))
        }
        let status = table.pointee.curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard status == CURLE_OK else {
            table.deallocate()
            throw DynamicLibraryError(library: soname, reason: "curl_global_init failed with code \(status.rawValue)")
        }
        return LibCurl(functions: UnsafePointer(table))
    }
}
