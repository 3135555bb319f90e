import HTTPDNSCore

/// ASCII-only `DomainRules` over a fixed suffix list, for unit tests.
///
/// Like libpsl with its default `*` rule, every top-level label counts as a public suffix
/// even when it is not listed.
public struct BasicDomainRules: DomainRules {
    /// The listed suffixes, lowercase, without leading dots.
    public let publicSuffixes: Set<String>

    public init(publicSuffixes: Set<String> = ["com", "org", "net", "example", "co.uk", "github.io"]) {
        self.publicSuffixes = publicSuffixes
    }

    public func canonicalHost(_ host: String) -> String? {
        HostNameSyntax.canonicalASCII(host)
    }

    public func isPublicSuffix(_ domain: String) -> Bool {
        guard IPLiteral.canonical(domain) == nil, !domain.isEmpty else { return false }
        return publicSuffixes.contains(domain) || !domain.contains(".")
    }

    public func registrableDomain(_ host: String) -> String? {
        guard IPLiteral.canonical(host) == nil, !host.isEmpty else { return nil }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        // Walk from the longest proper suffix to the shortest; the first public one wins.
        for start in 0..<labels.count {
            let suffix = labels[start...].joined(separator: ".")
            if isPublicSuffix(suffix) {
                return start == 0 ? nil : labels[(start - 1)...].joined(separator: ".")
            }
        }
        return nil
    }
}
