import HTTPDNSProtocol
import HTTPDNSURL

/// An absolute http, https, ws or wss URL as the cookie jar sees it: `HTTPURL` (the product's one
/// URL parser, WHATWG) with the host in the jar's canonical form.
///
/// A URL that curl's RFC 3986 reading would send to another host than this one is refused as
/// ambiguous (`RequestURL.Refusal.ambiguous`): a mis-read host would file cookies under the
/// wrong site. Spaces and controls are refused anywhere, as curl refuses them.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as parsed, without its fragment (which plays no part in cookies).
    public private(set) var url: HTTPURL
    /// Lowercase ASCII host (IDNA applied); IP literals without brackets in `IPLiteral`
    /// canonical form (RFC 5952 for IPv6).
    public let host: String
    /// True when `host` is an IPv4 or IPv6 literal.
    public let isIPLiteral: Bool

    /// Why a text is not a `RequestURL`.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not an absolute URL of a supported scheme with a host.
        case notAURL
        /// Parsed, but RFC 3986 (curl) would read another host or port (`HTTPURL.agreesWithRFC3986`).
        case ambiguous
    }

    /// Lowercased scheme: `http`, `https`, `ws` or `wss`.
    public var scheme: String { url.scheme.name }
    /// The explicit port, if the URL has one (nil for the scheme's default).
    public var port: UInt16? { url.port }
    /// The serialized path (always starts with `/`).
    public var path: String { url.path }
    /// The query without its `?`, if present.
    public var query: String? { url.query }

    /// The schemes the jar serves.
    public static let supportedSchemes: Set<String> = ["http", "https", "ws", "wss"]

    /// https and wss use TLS, so they count as "secure" protocols (RFC 6265bis 5.8.3).
    public var isSecure: Bool { url.scheme.isSecure }

    /// The path for cookie matching.
    public var cookiePath: String { path.isEmpty ? "/" : path }

    /// Parses `text`, or returns nil when it is not an absolute URL of a supported scheme or is
    /// ambiguous. Non-ASCII hosts need `toASCII`.
    public init?(_ text: String, toASCII: DomainToASCII? = nil) {
        var text = text
        guard case .success(let url) = text.withUTF8({ Self.parse(utf8: $0, toASCII: toASCII) }) else { return nil }
        self = url
    }

    /// `init(_:toASCII:)` on UTF-8 bytes.
    public init?(utf8 bytes: UnsafeBufferPointer<UInt8>, toASCII: DomainToASCII? = nil) {
        guard case .success(let url) = Self.parse(utf8: bytes, toASCII: toASCII) else { return nil }
        self = url
    }

    /// Parses and checks `bytes`, saying why it is refused.
    public static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>, toASCII: DomainToASCII?) -> Result<
        RequestURL, Refusal
    > {
        // Spaces and controls are refused anywhere, as curl does, rather than trimmed, removed or
        // encoded as the URL Standard would: no client sends them in a URL it requested.
        guard !containsSpaceOrControl(bytes), let url = HTTPURL(utf8: bytes, toASCII: toASCII) else {
            return .failure(.notAURL)
        }
        guard url.agreesWithRFC3986(utf8: bytes) else { return .failure(.ambiguous) }
        return .success(RequestURL(url))
    }

    /// `parse(utf8:toASCII:)` on a string.
    public static func parse(_ text: String, toASCII: DomainToASCII?) -> Result<RequestURL, Refusal> {
        var text = text
        return text.withUTF8 { parse(utf8: $0, toASCII: toASCII) }
    }

    /// A byte of 0x20 or below, or 0x7F, eight bytes a step.
    private static func containsSpaceOrControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteWords.firstIndex(
            in: bytes, flags: { ByteWords.below($0, 0x21) | ByteWords.equal($0, 0x7F) },
            isMatch: { $0 <= 0x20 || $0 == 0x7F }) != nil
    }

    /// The jar's view of a parsed URL.
    public init(_ url: HTTPURL) {
        self.url = url.withoutFragment
        switch url.host {
        case .domain(let name):
            host = name
            isIPLiteral = false
        case .ipv4:
            host = url.host.name
            isIPLiteral = true
        case .ipv6:
            host = IPLiteral.canonical(url.host.name) ?? url.host.name
            isIPLiteral = true
        }
    }

    /// The same URL with another host (used to substitute a host name for an IP literal).
    public func replacingHost(_ newHost: String) -> RequestURL {
        if CookieMatching.same(newHost, host) { return self }
        var url = self.url
        url.host = .domain(newHost)
        return RequestURL(url: url, host: newHost, isIPLiteral: IPLiteral.address(newHost) != nil)
    }

    private init(url: HTTPURL, host: String, isIPLiteral: Bool) {
        self.url = url
        self.host = host
        self.isIPLiteral = isIPLiteral
    }

    public var description: String { url.description }
}
