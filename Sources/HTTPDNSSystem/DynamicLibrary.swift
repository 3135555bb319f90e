import Glibc

/// A C library loaded at run time with dlopen(3), as systemd loads its optional libraries: the
/// daemon maps libcurl, hiredis and libsodium only when something needs them (an HTTP upstream,
/// the fleet), and when one cannot be loaded only what needs it fails, with this error.
///
/// Opened by SONAME (the ABI the headers describe) and never closed.
public struct DynamicLibrary: @unchecked Sendable {
    // @unchecked: the handle is never closed, and dlsym(3) may be called from any thread.
    /// The name it was opened by (`libcurl.so.4`).
    public let soname: String
    /// What dlopen returned, for the owner's symbol table.
    public let handle: UnsafeMutableRawPointer

    /// Loads `soname` with every symbol bound now (`RTLD_NOW`), so a library that lacks one
    /// fails here rather than at a later call, and its symbols private to this handle.
    public static func open(_ soname: String) throws(DynamicLibraryError) -> DynamicLibrary {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            throw DynamicLibraryError(library: soname, reason: lastError() ?? "dlopen failed")
        }
        return DynamicLibrary(soname: soname, handle: handle)
    }

    /// The error for a function `soname` lacks (found missing by the owner's table).
    public func missing(_ function: String) -> DynamicLibraryError {
        DynamicLibraryError(library: soname, reason: "no function \(function)")
    }

    /// dlerror(3)'s message (per thread), clearing it.
    private static func lastError() -> String? {
        guard let message = dlerror() else { return nil }
        return String(cString: message)
    }
}

/// Why a library could not be loaded: its name and dlerror(3)'s reason.
public struct DynamicLibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    public let library: String
    public let reason: String

    public init(library: String, reason: String) {
        self.library = library
        self.reason = reason
    }

    public var description: String { "cannot load \(library): \(reason)" }
}
