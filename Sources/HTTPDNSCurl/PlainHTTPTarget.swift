import HTTPDNSURL

/// Where a request `HTTPClient` serves itself goes, and its head: an `http://` URL to an IP address,
/// without userinfo, that every URL reader reads alike, sent without a proxy. Any other request is
/// libcurl's, a host name too: libcurl's resolver keeps the request's deadline, getaddrinfo has none.
struct PlainHTTPTarget: Sendable, Equatable {
    /// The address.
    let host: HTTPURL.Host
    /// The address as 4 or 16 network-order bytes.
    let addressBytes: [UInt8]
    let port: UInt16
    /// The Host header: the host as a URL writes it (an IPv6 address in brackets), with the port unless 80.
    let authority: String
    /// origin-form (RFC 9112 section 3.2.1): the path and the query.
    let requestTarget: String

    /// nil when the request is not plain HTTP to an address (https, a proxy, userinfo, a host name,
    /// a URL libcurl would read as another), so libcurl keeps it. `tlsName` is left out: libcurl
    /// ignores it for http too.
    init?(_ request: HTTPRequest) {
        guard request.proxy?.isEmpty ?? true, let url = HTTPURL(request.url), url.scheme == .http,
            url.username.isEmpty, url.password.isEmpty, url.agreesWithRFC3986(request.url)
        else { return nil }
        switch url.host {
        case .domain: return nil
        case .ipv4(let address): addressBytes = withUnsafeBytes(of: address.bigEndian) { Array($0) }
        case .ipv6(let address):
            addressBytes =
                withUnsafeBytes(of: address.high.bigEndian) { Array($0) }
                + withUnsafeBytes(of: address.low.bigEndian) { Array($0) }
        }
        host = url.host
        port = url.effectivePort
        authority = url.host.description + (url.port.map { ":\($0)" } ?? "")
        requestTarget = url.path + (url.query.map { "?" + $0 } ?? "")
    }

    /// The request's head and body as sent: Host, `Accept: */*` and `Connection: keep-alive` unless
    /// the request gives its own, then its headers (one with an empty value only removes the default
    /// of that name, as with libcurl), and Content-Length for a POST. nil when a header could split
    /// the head (a name that is not a token, a CR, LF or NUL in a value).
    func message(for request: HTTPRequest) -> [UInt8]? {
        var head = "\(request.method.rawValue) \(requestTarget) HTTP/1.1\r\n"
        func given(_ name: String) -> Bool { request.headers.contains { $0.name.lowercased() == name } }
        for (name, value) in [("Host", authority), ("Accept", "*/*"), ("Connection", "keep-alive")]
        where !given(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        for header in request.headers {
            guard !header.name.isEmpty, header.name.utf8.allSatisfy(Self.isTokenByte),
                !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { return nil }
            if !header.value.isEmpty { head += "\(header.name): \(header.value)\r\n" }
        }
        if request.method == .post && !given("content-length") { head += "Content-Length: \(request.body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + (request.method == .post ? request.body : [])
    }

    /// RFC 9110 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
