import HTTPDNSURL

/// Why an upstream gave no usable answer.
///
/// The description is one line for logs and `status.lastError`. It is built only from the code
/// and text this module produced or sanitized, never from a request URL, so a secret key (or the
/// signature derived from it) cannot leak through it.
public struct UpstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// A non-success HTTP status with no recognizable service error body.
        case httpStatus(Int)
        /// The body did not have the documented shape.
        case malformed(String)
        /// The name's CNAME chain loops or is too long to follow: its zone's doing.
        case unusableChain(String)
        /// An Alibaba-style error code from the body (`InvalidAccount`, `SignatureExpired`, ...).
        case serviceError(code: String)
        /// A DNS RCODE other than NOERROR and NXDOMAIN (2 = SERVFAIL, 5 = REFUSED, ...).
        case dnsStatus(Int)
        /// The DNS response was truncated (TC bit), which DoH should never send.
        case truncated
        /// Connection, TLS or protocol failure below HTTP.
        case transport(String)
        case timeout
        /// The response body was larger than the client accepts.
        case responseTooLarge
    }

    public let code: Code

    public init(_ code: Code) {
        self.code = code
    }

    /// Whether the failure belongs to the name asked, not to the upstream: the name's own zone
    /// failing or refused (SERVFAIL, REFUSED), its records too many for the answer (truncated, or
    /// over the size read) or its CNAME chain looping or too long, all of which anyone who owns a
    /// zone can cause; or the service refusing that one name (Alibaba's `InvalidHost`). Such a
    /// failure never moves the upstream's health nor its service address; the name alone may be
    /// asked of the next upstream.
    /// The account is refused whatever the name (an unsigned query where signing is required, an
    /// account that does not exist): asking again per call would only bill and fail every name.
    public var isAccountLevel: Bool {
        guard case .serviceError(let code) = code else { return false }
        return Self.accountErrorCodes.contains(code)
    }

    /// The providers' codes for an account that cannot query (UPSTREAMS.md; Alibaba's SDKs cache
    /// such an answer and stop asking).
    public static let accountErrorCodes: Set<String> = [
        "UnsignedInterfaceDisabled", "InvalidAccount", "AccountNotExists",
    ]

    public var isNameLevel: Bool {
        switch code {
        case .dnsStatus(let rcode): return rcode == 2 || rcode == 5
        case .serviceError(let code): return code == "InvalidHost"
        case .truncated, .responseTooLarge, .unusableChain: return true
        case .httpStatus, .malformed, .transport, .timeout: return false
        }
    }

    public var description: String {
        switch code {
        case .httpStatus(let status): return "HTTP status \(status)"
        case .malformed(let detail): return "malformed answer: \(UpstreamError.sanitize(detail))"
        case .unusableChain(let detail): return UpstreamError.sanitize(detail)
        case .serviceError(let code): return "service error \(UpstreamError.codeToken(code))"
        case .dnsStatus(let rcode): return "DNS error \(UpstreamError.rcodeName(rcode))"
        case .truncated: return "DNS answer truncated"
        case .transport(let detail): return "transport error: \(UpstreamError.sanitize(detail))"
        case .timeout: return "timed out"
        case .responseTooLarge: return "response too large"
        }
    }

    /// A service's error code as shown: a code is a short word (`InvalidAccount`), and anything
    /// else is not shown at all, since an upstream that echoes the request in it would put the
    /// signed query (whose signature stands for the secret key for a while) in every user's
    /// `status`.
    static func codeToken(_ code: String) -> String {
        let isToken =
            (1...64).contains(code.utf8.count)
            && code.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    return true
                default: return false
                }
            }
        return isToken ? code : "(not a code)"
    }

    /// Printable ASCII only, at most 160 characters: upstream text ends up in logs and JSON.
    static func sanitize(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(160) {
            out.unicodeScalars.append(scalar.value >= 0x20 && scalar.value < 0x7f ? scalar : "?")
        }
        return out
    }

    private static func rcodeName(_ rcode: Int) -> String {
        switch rcode {
        case 1: return "FORMERR"
        case 2: return "SERVFAIL"
        case 4: return "NOTIMP"
        case 5: return "REFUSED"
        default: return "RCODE \(rcode)"
        }
    }
}

/// An HTTP request an upstream codec wants sent; the server hands it to the HTTP client.
public struct UpstreamHTTPRequest: Sendable, Equatable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    public var method: Method
    public var url: String
    /// Extra header lines as (name, value).
    public var headers: [UpstreamHeader]
    public var body: [UInt8]

    public init(method: Method = .get, url: String, headers: [UpstreamHeader] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One header field, name and value (names compare case-insensitively): of a request to an
/// upstream, or of a response as `HTTP1ResponseParser` read it (the value without surrounding
/// whitespace).
public struct UpstreamHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// Query-string helpers shared by the codecs.
enum URLQuery {
    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func encode(_ value: String) -> String {
        URLComponentEncoding.queryValue(value)
    }

    /// `base` without trailing slashes, so configured URLs may be written either way.
    static func trimmedBase(_ base: String) -> String {
        var result = Substring(base)
        while result.hasSuffix("/") { result.removeLast() }
        return String(result)
    }

    /// Appends `query` to `url` with `?` or `&`, depending on whether the URL already has a query.
    static func append(_ query: String, to url: String) -> String {
        url + (url.contains("?") ? "&" : "?") + query
    }
}
