import HTTPDNSProtocol

/// A cookie request as the jar sees it, after domain normalization (httpdnsd-rpc(7), JARS AND
/// ADDRESS MEMORY). Every rule about requests sent to an IP address lives here.
///
/// A request names its site by its URL's host. When that host is an IP literal, the site is the
/// `host` the caller gives, else the one host name the caller's own address memory holds for that
/// IP, else the IP itself. Every name the memory holds counts, whether its answer is still within
/// its TTL or only retained past it: with two or more and no `host`, the request is refused as
/// ambiguous. The site is never picked by elimination, since whose login a cookie is must not be
/// guessed (nor steered by whoever resolves another name to the same address).
public struct CookieRequest: Sendable {
    /// The URL with its host in canonical form: for an IP literal with a known host name, that name.
    public let url: RequestURL
    /// The IP literal the request was sent to, when its URL held one.
    public let ipLiteral: String?

    /// The host the cookies are stored under and looked up for.
    public var host: String { url.host }

    private init(url: RequestURL, ipLiteral: String?) {
        self.url = url
        self.ipLiteral = ipLiteral
    }

    /// Normalizes a request. (A function rather than an initializer: a throwing initializer with
    /// several exits built the request aside and copied it, a tenth of a cached cookie lookup.)
    ///
    /// - Parameters:
    ///   - url: the URL as the client gave it.
    ///   - host: the client's `host` member: the real host name when `url` holds an IP literal
    ///     (ignored otherwise).
    ///   - rules: canonical host names.
    ///   - rememberedNames: the names the caller's address memory holds for an IP literal (asked
    ///     only for an IP URL without `host`).
    public static func normalizing(
        _ url: consuming RequestURL, host: String?, rules: any DomainRules,
        rememberedNames: (String) -> [String] = { _ in [] }
    ) throws(CookieRequestError) -> CookieRequest {
        guard url.isIPLiteral else {
            guard let canonical = rules.canonicalHost(url.host) else {
                throw .invalidHost(CookieHostError(field: "url", host: url.host))
            }
            return CookieRequest(url: url.replacingHost(canonical), ipLiteral: nil)
        }
        let address = url.host
        let name: String
        if let host {
            guard !host.isEmpty else { throw .emptyHost }
            name = host
        } else {
            let candidates = rememberedNames(address)
            guard candidates.count <= 1 else { throw .ambiguousAddress(address, candidates: candidates) }
            guard let only = candidates.first else { return CookieRequest(url: url, ipLiteral: address) }
            name = only
        }
        guard let canonical = rules.canonicalHost(name) else {
            throw .invalidHost(CookieHostError(field: "host", host: name))
        }
        return CookieRequest(url: url.replacingHost(canonical), ipLiteral: address)
    }

    /// Whether a `Domain` attribute names the IP the request was sent to: the cookie then belongs
    /// to the host name the IP stands for, host-only (so the jar never keys a cookie by the IP of a
    /// known host).
    func domainAttributeNamesAddress(_ domainAttribute: String) -> Bool {
        guard let ipLiteral, !domainAttribute.isEmpty else { return false }
        return IPLiteral.canonical(domainAttribute) == ipLiteral
    }
}

/// Why a cookie request could not be normalized.
public enum CookieRequestError: Error, Sendable, Equatable {
    /// `host` was given, empty.
    case emptyHost
    /// The caller's address memory holds several names for the IP and no `host` was given.
    case ambiguousAddress(String, candidates: [String])
    /// The URL's host, or the host name the IP stands for, is not a valid host name.
    case invalidHost(CookieHostError)
}
