import HTTPDNSProtocol

/// Typed calls, one per method of the contract (httpdnsd-rpc(7)), built on the shared param and result types.
extension HTTPDNSConnection {
    /// Calls `method` with typed params and reads its typed result.
    public func call<Params: MethodParams, Result: MethodResult>(
        _ method: Method, _ params: Params, as resultType: Result.Type = Result.self,
        timeoutMilliseconds: Int? = nil
    ) throws(ClientError) -> Result {
        let json = try call(method.rawValue, params: params.json, timeoutMilliseconds: timeoutMilliseconds)
        guard let result = Result(json: json) else {
            throw .malformedResponse("the \(method.rawValue) result does not match the contract")
        }
        return result
    }

    /// `resolve`. The reply deadline is stretched past `timeoutMs` so that the daemon's own
    /// timeout, not the client's, decides a slow lookup.
    public func resolve(_ params: ResolveParams) throws(ClientError) -> ResolveResult {
        let timeout = params.timeoutMs.map { max(defaultTimeoutMilliseconds, $0 + 5_000) }
        return try call(.resolve, params, timeoutMilliseconds: timeout)
    }

    public func resolve(
        host: String, family: AddressFamily = .both, allowStale: Bool = true, timeoutMs: Int? = nil
    ) throws(ClientError) -> ResolveResult {
        try resolve(ResolveParams(host: host, family: family, allowStale: allowStale, timeoutMs: timeoutMs))
    }

    /// `reverse`: the host names the daemon handed `address` out for, to this uid.
    public func reverse(address: String) throws(ClientError) -> ReverseResult {
        try call(.reverse, ReverseParams(address: address))
    }

    /// `getCookieHeader`: the `Cookie:` value for a request to `params.url`.
    public func cookieHeader(_ params: GetCookieHeaderParams) throws(ClientError) -> CookieHeaderResult {
        try call(.getCookieHeader, params)
    }

    public func cookieHeader(url: String, host: String? = nil) throws(ClientError) -> CookieHeaderResult {
        try cookieHeader(GetCookieHeaderParams(url: url, host: host))
    }

    /// `handleSetCookie`: stores a response's `Set-Cookie` values.
    public func handleSetCookie(_ params: HandleSetCookieParams) throws(ClientError) -> SetCookieResult {
        try call(.handleSetCookie, params)
    }

    public func handleSetCookie(url: String, host: String? = nil, setCookie: [String]) throws(ClientError)
        -> SetCookieResult
    {
        try handleSetCookie(HandleSetCookieParams(url: url, host: host, setCookie: setCookie))
    }

    /// `deleteCookies`; returns how many cookies were deleted.
    public func deleteCookies(_ params: DeleteCookiesParams) throws(ClientError) -> Int {
        try call(.deleteCookies, params, as: DeleteCookiesResult.self).deleted
    }

    /// `listCookies`, optionally limited to one domain and its subdomains.
    public func listCookies(domain: String? = nil) throws(ClientError) -> [Cookie] {
        try call(.listCookies, ListCookiesParams(domain: domain), as: ListCookiesResult.self).cookies
    }

    /// `importCookies` of a Netscape cookies.txt text; returns how many were imported.
    public func importCookies(netscape data: String) throws(ClientError) -> Int {
        try call(.importCookies, ImportCookiesParams(data: data), as: ImportCookiesResult.self).imported
    }

    /// `exportCookies` as Netscape cookies.txt text.
    public func exportCookies() throws(ClientError) -> String {
        try call(.exportCookies, ExportCookiesParams(), as: ExportCookiesResult.self).data
    }

    /// `flushCache` of one host, or of every host when nil; returns how many entries went.
    public func flushCache(host: String? = nil) throws(ClientError) -> Int {
        try call(.flushCache, FlushCacheParams(host: host), as: FlushCacheResult.self).flushed
    }

    /// `status`.
    public func status() throws(ClientError) -> StatusResult {
        try call(.status, StatusParams())
    }

    /// `rpc.discover`: the OpenRPC document.
    public func discover() throws(ClientError) -> JSON {
        let result = try call(.discover, DiscoverParams(), as: DiscoverResult.self)
        guard let document = result.document else { throw .malformedResponse("the OpenRPC document") }
        return document
    }
}
