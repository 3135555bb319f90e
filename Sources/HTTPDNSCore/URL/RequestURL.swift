import HTTPDNSProtocol
import HTTPDNSURL

/// An absolute http, https, ws or wss URL as the cookie jar sees it: `HTTPURL` (the product's one
/// URL parser, WHATWG) with the host in the jar's canonical form.
///
/// A URL that curl's RFC 3986 reading would send to another host than this one is refused as
/// ambiguous (`RequestURL.Refusal.ambiguous`): a mis-read host would file cookies under the
/// wrong site. Spaces and controls are refused anywhere, as curl refuses them.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    /// The scheme.
    public let schemeKind: HTTPURL.Scheme
    /// Lowercase ASCII host (IDNA applied); IP literals without brackets in `IPLiteral`
    /// canonical form (RFC 5952 for IPv6).
    public let host: String
    /// True when `host` is an IPv4 or IPv6 literal.
    public let isIPLiteral: Bool
    /// The explicit port, if the URL has one (nil for the scheme's default).
    public let port: UInt16?
    /// The serialized path (always starts with `/`). The query and fragment play no part in
    /// cookies and are not kept.
    public let path: String

    /// Why a text is not a `RequestURL`.
    public enum Refusal: Error, Sendable, Equatable {
        /// Not an absolute URL of a supported scheme with a host.
        case notAURL
        /// Parsed, but RFC 3986 (curl) would read another host or port (`HTTPURL.agreesWithRFC3986`).
        case ambiguous
    }

    /// Lowercased scheme: `http`, `https`, `ws` or `wss`.
    public var scheme: String { schemeKind.name }

    /// The schemes the jar serves.
    public static let supportedSchemes: Set<String> = ["http", "https", "ws", "wss"]

    /// https and wss use TLS, so they count as "secure" protocols (RFC 6265bis 5.8.3).
    public var isSecure: Bool { schemeKind.isSecure }

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
        // Nearly every URL is plain, and a plain URL is read alike by every reader (and holds
        // no space or control).
        if let plain = HTTPURL.plainParts(utf8: bytes) {
            return .success(RequestURL(scheme: plain.scheme, host: plain.host, port: plain.port, path: plain.path))
        }
        // Spaces and controls are refused anywhere, as curl does, rather than trimmed, removed or
        // encoded as the URL Standard would: no client sends them in a URL it requested.
        guard !containsSpaceOrControl(bytes) else { return .failure(.notAURL) }
        guard let url = HTTPURL(utf8: bytes, toASCII: toASCII) else { return .failure(.notAURL) }
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

    /// The jar's view of a parsed URL: its fragment and userinfo play no part in cookies. Only
    /// what the jar reads is kept, so that passing a request around copies little.
    public init(_ url: HTTPURL) {
        self.init(scheme: url.scheme, host: url.host, port: url.port, path: url.path)
    }

    private init(scheme: HTTPURL.Scheme, host: HTTPURL.Host, port: UInt16?, path: String) {
        schemeKind = scheme
        self.port = port
        self.path = path
        switch host {
        case .domain(let name):
            self.host = name
            isIPLiteral = false
        case .ipv4(let address):
            self.host = HTTPURL.Host.dottedDecimal(address)
            isIPLiteral = true
        case .ipv6:
            self.host = IPLiteral.canonical(host.name) ?? host.name
            isIPLiteral = true
        }
    }

    private init(_ other: RequestURL, host: String) {
        schemeKind = other.schemeKind
        port = other.port
        path = other.path
        self.host = host
        isIPLiteral = IPLiteral.address(host) != nil
    }

    /// The same URL with another host (used to substitute a host name for an IP literal).
    public consuming func replacingHost(_ newHost: String) -> RequestURL {
        if CookieMatching.same(newHost, host) { return self }
        return RequestURL(self, host: newHost)
    }

    public var description: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let portPart = port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(hostPart)\(portPart)\(path)"
    }
}
