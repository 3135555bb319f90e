import HTTPDNSIDNA
import HTTPDNSURL

/// An absolute `http` or `https` URL as the product's one URL parser (`HTTPURL`, WHATWG) reads
/// it, with the parts an IP-direct request needs: the host to resolve, the port a connection
/// goes to, and the origin that credentials are scoped to.
///
/// `url` is the serialization: what curl or libcurl is handed and what the daemon's jar is
/// asked about, so the two can never disagree on the site. A text that curl's RFC 3986 reading
/// would send to another host (a backslash or a second `@` in the authority, a
/// percent-escaped or non-dotted-decimal IPv4 host) is refused as ambiguous.
public struct HTTPTarget: Sendable, Equatable, CustomStringConvertible {
    /// The parsed URL.
    public let parsed: HTTPURL
    /// The serialized URL, as it will be requested.
    public let url: String

    /// Why a text is not a target.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not an absolute http or https URL with a host.
        case notHTTP
        /// RFC 3986 (curl) would read another host or port than the WHATWG URL Standard.
        case ambiguous
    }

    /// nil unless `text` is an unambiguous absolute http(s) URL with a host and a valid port.
    public init?(_ text: String) {
        guard case .success(let target) = Self.parse(text) else { return nil }
        self = target
    }

    init(_ parsed: HTTPURL) {
        self.parsed = parsed
        self.url = parsed.description
    }

    /// Parses `text`, saying why it is refused.
    public static func parse(_ text: String) -> Result<HTTPTarget, Refusal> {
        guard let parsed = HTTPURL(text, toASCII: IDNA.urlDomainToASCII),
            parsed.scheme == .http || parsed.scheme == .https
        else { return .failure(.notHTTP) }
        guard parsed.agreesWithRFC3986(text) else { return .failure(.ambiguous) }
        return .success(HTTPTarget(parsed))
    }

    /// `http` or `https`.
    public var scheme: String { parsed.scheme.name }
    /// The host, lowercase ASCII; an IPv6 literal without its brackets.
    public var host: String { parsed.host.name }
    /// The explicit port, else 80 or 443.
    public var port: UInt16 { parsed.effectivePort }
    /// The serialized path (from `/`, without query and fragment).
    public var path: String { parsed.path }
    /// Whether `host` is an IPv4 or IPv6 address rather than a name (nothing to resolve).
    public var isIPLiteral: Bool { parsed.host.isIPAddress }

    public var description: String { url }

    /// Two targets share an origin (RFC 6454) when scheme, host and port are equal.
    public func isSameOrigin(as other: HTTPTarget) -> Bool { parsed.isSameOrigin(as: other.parsed) }

    /// This URL with `site`'s host in place of its own, everything else (scheme, credentials,
    /// port, path, query, fragment) kept: the URL an IP-direct request names once a Host header
    /// says which site the IP serves.
    public func replacingHost(with site: HTTPTarget) -> HTTPTarget {
        var replaced = parsed
        replaced.host = site.parsed.host
        return HTTPTarget(replaced)
    }

    /// The `host:port:addr[,addr...]` entry of curl's `--resolve` and libcurl's `CURLOPT_RESOLVE`,
    /// IPv6 addresses in brackets; nil when there is no address or the host is an IP literal.
    public func resolveEntry(addresses: [String]) -> String? {
        guard !isIPLiteral, !addresses.isEmpty else { return nil }
        let list = addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
        return "\(host):\(port):\(list)"
    }

    /// The target of a `Location` value received for this URL: parsed relative to it as
    /// browsers do (RFC 9110 section 10.2.2), keeping this URL's fragment when the Location has
    /// none. Refused when it is not an http(s) URL, or when the Location names its authority in
    /// a form RFC 3986 reads as another host (`http://bank.example\@attacker/`).
    public func redirect(to location: String) -> Result<HTTPTarget, Refusal> {
        guard var next = HTTPURL(location, base: parsed, toASCII: IDNA.urlDomainToASCII),
            next.scheme == .http || next.scheme == .https
        else { return .failure(.notHTTP) }
        if next.fragment == nil { next.fragment = parsed.fragment }
        if let authority = Self.authorityForm(location, scheme: parsed.scheme.name),
            !next.agreesWithRFC3986(authority)
        {
            return .failure(.ambiguous)
        }
        return .success(HTTPTarget(next))
    }

    /// A Location that names an authority (with a scheme, or starting with two slashes or
    /// backslashes), written with a scheme; nil for a path, query or fragment reference, which
    /// keeps the host both readings agree on.
    static func authorityForm(_ location: String, scheme: String) -> String? {
        let trimmed = location.drop { $0.asciiValue.map { $0 <= 0x20 } ?? false }
        let slashes = trimmed.prefix { $0 == "/" || $0 == "\\" }.count
        if slashes >= 2 { return scheme + ":" + trimmed }
        guard let colon = trimmed.firstIndex(of: ":"), let first = trimmed.first, first.isASCII, first.isLetter,
            trimmed[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        return String(trimmed)
    }
}
