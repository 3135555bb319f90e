import HTTPDNSCore
import HTTPDNSIDNA
import HTTPDNSProtocol

/// getCookieHeader's params with the URL parsed from the request's bytes (a refusal: not a URL the
/// jar serves, or an ambiguous one, refused by the method after every member was read).
typealias CookieHeaderQuery = URLParams<GetCookieHeaderParams, Result<RequestURL, RequestURL.Refusal>>
/// handleSetCookie's params, the same way.
typealias SetCookieQuery = URLParams<HandleSetCookieParams, Result<RequestURL, RequestURL.Refusal>>

extension URLParams where Members == HandleSetCookieParams {
    /// A store costs with its cookies.
    static func workUnits(_ query: borrowing Self) -> Int { WorkCost.cookiesStored(query.members.setCookie.count) }
}

extension URLParams where URLValue == Result<RequestURL, RequestURL.Refusal> {
    /// Reads the params, the URL with the jar's parser.
    static func read(_ params: Params) throws(RPCError) -> Self {
        try Self(params) { RequestURL.parse(utf8: $0, toASCII: IDNA.urlDomainToASCII) }
    }
}
