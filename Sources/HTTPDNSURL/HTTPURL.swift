/// Converts a domain to ASCII as the WHATWG URL Standard's "domain to ASCII" does (UTS #46
/// ToASCII, non-transitional, CheckHyphens off), or returns nil when it is not a valid domain.
/// Only called for domains that are not plain ASCII (or that hold an `xn--` label): plain
/// ASCII domains are lowercased here, which the standard says is equivalent.
public typealias DomainToASCII = @Sendable (String) -> String?

/// An absolute `http`, `https`, `ws` or `wss` URL, parsed as the WHATWG URL Standard's basic URL
/// parser parses it: the one URL parser of the whole product (daemon, httpdnsctl, libhttpdns).
///
/// Backslashes are path separators, tabs and newlines are removed, leading and trailing
/// controls and spaces are trimmed, hosts are percent-decoded and converted to ASCII (IDNA
/// through the `DomainToASCII` given; without one, only ASCII hosts parse), a host that ends in
/// a number is an IPv4 address in any of the standard's number forms (`0x7f.1`), and userinfo
/// ends at the authority's last `@`. Every other scheme is refused. It never traps, whatever
/// the input.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    /// The four schemes parsed here (all "special" in the standard).
    public enum Scheme: UInt8, Sendable, Hashable, CaseIterable {
        case http, https, ws, wss

        /// The scheme as written in a serialized URL, lowercase.
        public var name: String {
            switch self {
            case .http: "http"
            case .https: "https"
            case .ws: "ws"
            case .wss: "wss"
            }
        }

        /// 80 or 443.
        public var defaultPort: UInt16 {
            switch self {
            case .http, .ws: 80
            case .https, .wss: 443
            }
        }

        /// https and wss use TLS.
        public var isSecure: Bool { self == .https || self == .wss }
    }

    /// A parsed host: a domain (ASCII, lowercase), an IPv4 or an IPv6 address.
    public enum Host: Sendable, Hashable, CustomStringConvertible {
        case domain(String)
        case ipv4(UInt32)
        case ipv6(IPv6Address)

        /// The host as a URL writes it: an IPv6 address in brackets.
        public var description: String {
            switch self {
            case .domain(let name): name
            case .ipv4(let address): Self.dottedDecimal(address)
            case .ipv6(let address): "[\(address)]"
            }
        }

        /// The host without brackets: what a resolver or `--resolve` is given.
        public var name: String {
            switch self {
            case .domain(let name): name
            case .ipv4(let address): Self.dottedDecimal(address)
            case .ipv6(let address): address.description
            }
        }

        /// True for an IPv4 or IPv6 address.
        public var isIPAddress: Bool {
            if case .domain = self { return false }
            return true
        }

        /// An IPv4 address in dotted decimal, written byte by byte into one allocation:
        /// interpolating four numbers was a sixth of a cookie lookup by IP.
        public static func dottedDecimal(_ address: UInt32) -> String {
            String(unsafeUninitializedCapacity: 15) { out in
                var count = 0
                for shift in stride(from: 24, through: 0, by: -8) {
                    let byte = UInt8(truncatingIfNeeded: address >> UInt32(shift))
                    if byte >= 100 {
                        out[count] = UInt8(ascii: "0") + byte / 100
                        count += 1
                    }
                    if byte >= 10 {
                        out[count] = UInt8(ascii: "0") + byte / 10 % 10
                        count += 1
                    }
                    out[count] = UInt8(ascii: "0") + byte % 10
                    count += 1
                    if shift > 0 {
                        out[count] = UInt8(ascii: ".")
                        count += 1
                    }
                }
                return count
            }
        }
    }

    /// An IPv6 address as eight 16-bit pieces, most significant first.
    public struct IPv6Address: Sendable, Hashable, CustomStringConvertible {
        /// Pieces 0 to 3.
        public var high: UInt64
        /// Pieces 4 to 7.
        public var low: UInt64

        /// The address from its eight pieces.
        public init(pieces: [UInt16]) {
            precondition(pieces.count == 8)
            high = pieces[0..<4].reduce(0) { $0 << 16 | UInt64($1) }
            low = pieces[4..<8].reduce(0) { $0 << 16 | UInt64($1) }
        }

        /// Piece `index` (0...7).
        public func piece(_ index: Int) -> UInt16 {
            let word = index < 4 ? high : low
            return UInt16(truncatingIfNeeded: word >> (16 * UInt64(3 - index % 4)))
        }

        /// The standard's IPv6 serializer: lowercase hex, the first longest run of two or more
        /// zero pieces written `::` (RFC 5952, except that no IPv4 form is used).
        public var description: String {
            var compress = -1
            var longest = 1
            var index = 0
            while index < 8 {
                var end = index
                while end < 8 && piece(end) == 0 { end += 1 }
                if end - index > longest {
                    longest = end - index
                    compress = index
                }
                index = end == index ? index + 1 : end
            }
            var output = ""
            var position = 0
            while position < 8 {
                if position == compress {
                    output += position == 0 ? "::" : ":"
                    position += longest
                    continue
                }
                output += String(piece(position), radix: 16)
                if position < 7 { output += ":" }
                position += 1
            }
            return output
        }
    }

    public var scheme: Scheme
    /// Percent-encoded as serialized; empty when absent.
    public var username: String
    /// Percent-encoded as serialized; empty when absent.
    public var password: String
    public var host: Host
    /// The port, nil when absent or equal to the scheme's default.
    public var port: UInt16?
    /// The serialized path: `/` and the segments joined by `/`, percent-encoded.
    public var path: String
    /// The query without its `?`, nil when absent.
    public var query: String?
    /// The fragment without its `#`, nil when absent.
    public var fragment: String?

    /// A URL from parts that are already in serialized form (`parse` makes them so).
    public init(
        scheme: Scheme, username: String = "", password: String = "", host: Host, port: UInt16?, path: String,
        query: String?, fragment: String?
    ) {
        self.scheme = scheme
        self.username = username
        self.password = password
        self.host = host
        self.port = port == scheme.defaultPort ? nil : port
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// The port a connection goes to: the explicit one or the scheme's default.
    public var effectivePort: UInt16 { port ?? scheme.defaultPort }

    /// The URL serializer's output (`href`).
    public var description: String {
        var text = scheme.name + "://"
        if !username.isEmpty || !password.isEmpty {
            text += username
            if !password.isEmpty { text += ":" + password }
            text += "@"
        }
        text += host.description
        if let port { text += ":\(port)" }
        text += path
        if let query { text += "?" + query }
        if let fragment { text += "#" + fragment }
        return text
    }

    /// The same URL without its fragment (what is sent in a request line).
    public var withoutFragment: HTTPURL {
        var copy = self
        copy.fragment = nil
        return copy
    }

    /// Two URLs share an origin (RFC 6454) when scheme, host and port are equal: what decides
    /// whether credentials meant for one may go to the other.
    public func isSameOrigin(as other: HTTPURL) -> Bool {
        scheme == other.scheme && host == other.host && effectivePort == other.effectivePort
    }

    /// Parses `text`, relative to `base` when it is a relative reference (a redirect's
    /// `Location`); nil when the result is not an http, https, ws or wss URL with a host.
    public init?(_ text: String, base: HTTPURL? = nil, toASCII: DomainToASCII? = nil) {
        var text = text
        guard let url = text.withUTF8({ URLParser.parse($0, base: base, toASCII: toASCII) }) else { return nil }
        self = url
    }

    /// The fast lane alone: `bytes` when it is a plain ASCII URL (`scheme://host[:port]` with a
    /// lowercase-able domain or a dotted-quad IPv4 host, no userinfo, nothing to encode, decode or
    /// remove), else nil. Such a URL is its own serialization up to case and default port, and
    /// every reader, RFC 3986 or WHATWG, reads the same host from it (`agreesWithRFC3986` holds).
    public static func plain(utf8 bytes: UnsafeBufferPointer<UInt8>) -> HTTPURL? {
        URLParser.parsePlain(bytes)
    }

    /// A plain URL's parts (`plain(utf8:)`), without building the URL, its query or its
    /// fragment: for a caller that keeps only some of them on a hot path.
    public struct Plain: Sendable {
        public var scheme: Scheme
        public var host: Host
        /// nil when absent or the scheme's default.
        public var port: UInt16?
        public var path: String
        /// Where the query (after `?`, before any `#`) is in the input, if there is one.
        public var query: Range<Int>?
        /// Where the fragment (after `#`) is in the input, if there is one.
        public var fragment: Range<Int>?
    }

    /// `plain(utf8:)`'s parts.
    public static func plainParts(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Plain? {
        URLParser.parsePlainParts(bytes)
    }

    /// `init(_:base:toASCII:)` on UTF-8 bytes (invalid sequences read as U+FFFD).
    public init?(utf8 bytes: UnsafeBufferPointer<UInt8>, base: HTTPURL? = nil, toASCII: DomainToASCII? = nil) {
        guard let url = URLParser.parse(bytes, base: base, toASCII: toASCII) else { return nil }
        self = url
    }
}
