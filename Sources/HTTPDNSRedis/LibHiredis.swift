import CHiredis
import HTTPDNSSystem

/// hiredis, loaded on first use: `libhiredis.so.0.14` opened with dlopen and its functions
/// resolved into one table, once per process, from whichever thread comes first.
struct LibHiredis: @unchecked Sendable {
    // @unchecked: the table is written once, before it is published, and only read afterwards.
    /// The ABI `hiredis.h` describes.
    static let soname = "libhiredis.so.0.14"

    /// The functions RedisConnection calls (`functions.pointee.redisFree(context)`).
    let functions: UnsafePointer<chiredis_functions>

    /// The outcome of the first use, kept: a library that could not be loaded is not tried again
    /// until the daemon restarts. (A `static let` initialiser runs once, thread-safely.)
    private static let loaded = Result { () throws(DynamicLibraryError) in try load() }

    /// The loaded library, or why it cannot be loaded.
    static func shared() throws(DynamicLibraryError) -> LibHiredis { try loaded.get() }

    private static func load() throws(DynamicLibraryError) -> LibHiredis {
        let library = try DynamicLibrary.open(soname)
        let table = UnsafeMutablePointer<chiredis_functions>.allocate(capacity: 1)
        if let missing = chiredis_resolve(library.handle, table) {
            table.deallocate()
            throw library.missing(String(cString: missing))
        }
        return LibHiredis(functions: UnsafePointer(table))
    }
}
