import HTTPDNSCore
import HTTPDNSProtocol

extension CookieJar {
    /// The changes since they were last taken, expiry purges not told apart: how tests read the
    /// jar's change log.
    public func drainChanges() -> [CookieChange] { takeChanges().changes }
}

extension CookieRequest {
    /// `url` with `host`, normalized by `jar`'s rules, with no address memory.
    public init(_ url: RequestURL, host: String? = nil, for jar: CookieJar) throws(CookieRequestError) {
        self = try CookieRequest.normalizing(url, host: host, rules: jar.rules)
    }
}
