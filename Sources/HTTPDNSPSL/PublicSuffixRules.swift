import CPSL
import HTTPDNSCore
import HTTPDNSIDNA

/// `DomainRules` backed by libpsl (public suffix list) and libidn2 (IDNA).
///
/// `@unchecked Sendable`: the libpsl context is loaded once in `init` and only read
/// afterwards (libpsl's lookups take a `const psl_ctx_t *` and keep no state), and libidn2's
/// conversion functions are reentrant. So sharing one instance between threads is safe.
public final class PublicSuffixRules: DomainRules, @unchecked Sendable {
    /// Where the suffix list came from.
    public enum Source: String, Sendable {
        /// The system's list file (`psl_latest`), newer than or as new as the built-in one.
        case latest
        /// The list compiled into libpsl (`psl_builtin`).
        case builtin
    }

    public let source: Source
    private let context: OpaquePointer
    /// True when `context` came from `psl_latest` and must be freed with `psl_free`.
    private let ownsContext: Bool

    /// Loads the newest suffix list available: the system file, else libpsl's built-in list.
    public init() throws(PublicSuffixRulesError) {
        if let latest = psl_latest(nil) {
            context = latest
            ownsContext = true
            source = .latest
        } else if let builtin = psl_builtin() {
            context = builtin
            ownsContext = false
            source = .builtin
        } else {
            throw PublicSuffixRulesError(message: "libpsl has neither a system list nor built-in data")
        }
    }

    deinit {
        if ownsContext { psl_free(context) }
    }

    public func canonicalHost(_ host: String) -> String? {
        // Most names are canonical already: one pass over their bytes says so (see `isCanonical`).
        HostNameSyntax.isCanonical(host) ? host : Self.checkedCanonicalHost(host)
    }

    /// `canonicalHost` without its fast lane: IP literals, then ASCII syntax, else IDNA first.
    static func checkedCanonicalHost(_ host: String) -> String? {
        // No name longer can be valid: refused before any pass over its bytes.
        guard host.utf8.count <= IDNA.maxInputBytes else { return nil }
        if let ip = IPLiteral.canonical(host) { return ip }
        if HostNameSyntax.isASCII(host) { return HostNameSyntax.canonicalASCII(host) }
        // IDNA refuses a NUL (libidn2 reads C strings) and a name past its bound.
        guard let aLabels = Self.toASCII(host) else { return nil }
        return HostNameSyntax.canonicalASCII(aLabels)
    }

    public func isPublicSuffix(_ domain: String) -> Bool {
        guard !domain.isEmpty, !domain.utf8.contains(0), !IPLiteral.isIPLiteral(domain) else { return false }
        let (name, _) = Self.splitTrailingDot(domain)
        guard !name.isEmpty else { return false }
        // PSL_TYPE_ANY: private-section suffixes (github.io) count, as browsers treat them.
        return psl_is_public_suffix2(context, name, PSL_TYPE_ANY) != 0
    }

    public func registrableDomain(_ host: String) -> String? {
        guard !host.isEmpty, !host.utf8.contains(0), !IPLiteral.isIPLiteral(host) else { return nil }
        let (name, trailingDot) = Self.splitTrailingDot(host)
        guard !name.isEmpty else { return nil }
        // psl_registrable_domain returns a pointer into its argument: copy it out while the
        // C string is alive.
        let result: String? = name.withCString { cName in
            guard let registrable = psl_registrable_domain(context, cName) else { return nil }
            return String(cString: registrable)
        }
        return result.map { trailingDot ? $0 + "." : $0 }
    }

    /// UTS #46 non-transitional processing (IDNA2008, what browsers do now), falling back
    /// to transitional processing (IDNA2003 compatible) for names only it accepts.
    static func toASCII(_ host: String) -> String? {
        IDNA.toASCII(host, transitional: false) ?? IDNA.toASCII(host, transitional: true)
    }

    private static func splitTrailingDot(_ name: String) -> (String, Bool) {
        name.hasSuffix(".") ? (String(name.dropLast()), true) : (name, false)
    }
}

/// libpsl could not provide a suffix list.
public struct PublicSuffixRulesError: Error, Sendable, Equatable {
    public let message: String
}
