import HTTPDNSProtocol

/// Typed calls, one per method of API.md, built on the shared param and result types.
extension HTTPDNSConnection {
    /// `resolve`. The reply deadline is stretched past `timeoutMs` so that the daemon's own
    /// timeout, not the client's, decides a slow lookup.
    public func resolve(_ params: ResolveParams) throws(ClientError) -> ResolveResult {
        let timeout = params.timeoutMs.map { max(defaultTimeoutMilliseconds, $0 + 5_000) }
        let json = try call(Method.resolve.rawValue, params: params.json, timeoutMilliseconds: timeout)
        return try Self.decode(json, Method.resolve, ResolveResult.init(json:))
    }

    public func resolve(
        host: String, family: AddressFamily = .both, allowStale: Bool = true, timeoutMs: Int? = nil
    ) throws(ClientError) -> ResolveResult {
        try resolve(ResolveParams(host: host, family: family, allowStale: allowStale, timeoutMs: timeoutMs))
    }

    /// `reverse`: the host names the daemon handed `address` out for, to this uid.
    public func reverse(address: String) throws(ClientError) -> ReverseResult {
        let json = try call(Method.reverse.rawValue, params: ReverseParams(address: address).json)
        return try Self.decode(json, Method.reverse, ReverseResult.init(json:))
    }

    /// `getCookieHeader`: the `Cookie:` value for a request to `params.url`.
    public func cookieHeader(_ params: GetCookieHeaderParams) throws(ClientError) -> CookieHeaderResult {
        let json = try call(Method.getCookieHeader.rawValue, params: params.json)
        return try Self.decode(json, Method.getCookieHeader, CookieHeaderResult.init(json:))
    }

    public func cookieHeader(url: String, host: String? = nil) throws(ClientError) -> CookieHeaderResult {
        try cookieHeader(GetCookieHeaderParams(url: url, host: host))
    }

    /// `handleSetCookie`: stores a response's `Set-Cookie` values.
    public func handleSetCookie(_ params: HandleSetCookieParams) throws(ClientError) -> SetCookieResult {
        let json = try call(Method.handleSetCookie.rawValue, params: params.json)
        return try Self.decode(json, Method.handleSetCookie, SetCookieResult.init(json:))
    }

    public func handleSetCookie(url: String, host: String? = nil, setCookie: [String]) throws(ClientError)
        -> SetCookieResult
    {
        try handleSetCookie(HandleSetCookieParams(url: url, host: host, setCookie: setCookie))
    }

    /// `deleteCookies`; returns how many cookies were deleted.
    public func deleteCookies(_ params: DeleteCookiesParams) throws(ClientError) -> Int {
        let json = try call(Method.deleteCookies.rawValue, params: params.json)
        return try Self.decode(json, Method.deleteCookies) { CountResult.count("deleted", in: $0) }
    }

    /// `listCookies`, optionally limited to one domain and its subdomains.
    public func listCookies(domain: String? = nil) throws(ClientError) -> [CookieRecord] {
        let json = try call(Method.listCookies.rawValue, params: ListCookiesParams(domain: domain).json)
        return try Self.decode(json, Method.listCookies, ListCookiesResult.init(json:)).cookies
    }

    /// `importCookies` of a Netscape cookies.txt text; returns how many were imported.
    public func importCookies(netscape data: String) throws(ClientError) -> Int {
        let json = try call(Method.importCookies.rawValue, params: ImportCookiesParams(data: data).json)
        return try Self.decode(json, Method.importCookies) { CountResult.count("imported", in: $0) }
    }

    /// `exportCookies` as Netscape cookies.txt text.
    public func exportCookies() throws(ClientError) -> String {
        let json = try call(Method.exportCookies.rawValue, params: ExportCookiesParams().json)
        return try Self.decode(json, Method.exportCookies) { $0["data"]?.stringValue }
    }

    /// `flushCache` of one host, or of every host when nil; returns how many entries went.
    public func flushCache(host: String? = nil) throws(ClientError) -> Int {
        let json = try call(Method.flushCache.rawValue, params: FlushCacheParams(host: host).json)
        return try Self.decode(json, Method.flushCache) { CountResult.count("flushed", in: $0) }
    }

    /// `status`.
    public func status() throws(ClientError) -> StatusResult {
        let json = try call(Method.status.rawValue)
        return try Self.decode(json, Method.status, StatusResult.init(json:))
    }

    /// `rpc.discover`: the OpenRPC document.
    public func discover() throws(ClientError) -> JSON {
        let json = try call(Method.discover.rawValue)
        return try Self.decode(json, Method.discover) { $0["openrpc"]?.stringValue != nil ? $0 : nil }
    }

    private static func decode<T>(_ json: JSON, _ method: Method, _ read: (JSON) -> T?) throws(ClientError) -> T {
        guard let value = read(json) else {
            throw .malformedResponse("the \(method.rawValue) result does not match the contract")
        }
        return value
    }
}
