import Glibc
import HTTPDNSClient
import HTTPDNSProtocol

// httpdns_prepare_request_host (httpdns.h): one IP-direct request, also for a URL that holds the
// IP address and names its host separately, as curl's IP-direct pattern does.

/// The flags httpdns.h defines for `httpdns_prepare_request_host`.
enum PrepareFlags {
    /// `HTTPDNS_NO_STALE`: an expired answer is not wanted (resolve with `allowStale: false`).
    static let noStale: UInt32 = 0x1
    static let known: UInt32 = noStale
}

@_cdecl("httpdns_prepare_request_host")
public func httpdns_prepare_request_host(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?, _ flags: UInt32,
    _ requestURL: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ resolveEntry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ cookieHeader: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ stale: UnsafeMutablePointer<Int32>?
) -> Int32 {
    requestURL?.pointee = nil
    resolveEntry?.pointee = nil
    cookieHeader?.pointee = nil
    stale?.pointee = 0
    guard let handle = HandleRegistry.handle(client) else { return -EINVAL }
    return handle.call(onFailure: { $0.code }) { connection throws(CallFailure) in
        guard flags & ~PrepareFlags.known == 0 else {
            throw CallFailure(-EINVAL, "flags holds bits httpdns.h does not define: 0x\(String(flags, radix: 16))")
        }
        let given = try parsedTarget(requiredText(url, "url"))
        let site = try siteTarget(text(host, "host"), for: given)
        let plan = try IPDirectPlan(given: given, site: site, allowStale: flags & PrepareFlags.noStale == 0) {
            (host, allowStale) throws(CallFailure) in
            try daemon { () throws(ClientError) in try connection.resolve(host: host, allowStale: allowStale) }
        }
        // An IP-literal request asks the jar even when no Cookie header is wanted: an address that
        // several of the caller's names share must stop it before it is sent, as the cookies it
        // sets could not be stored.
        var header: String?
        if cookieHeader != nil || plan.target.isIPLiteral {
            do throws(ClientError) {
                header = try connection.cookieHeader(url: plan.target.url).header
            } catch {
                if let ambiguity = AmbiguousAddress(error) { throw CallFailure(-ENOTUNIQ, ambiguity.message) }
                throw CallFailure(error)
            }
        }
        // Copied only once every call succeeded, so a failure leaves nothing to free.
        let copies = try CStringCopies([
            requestURL == nil ? nil : plan.target.url,
            resolveEntry == nil ? nil : plan.resolveEntry,
            cookieHeader == nil ? nil : header,
        ])
        requestURL?.pointee = copies.pointers[0]
        resolveEntry?.pointee = copies.pointers[1]
        cookieHeader?.pointee = copies.pointers[2]
        stale?.pointee = plan.stale ? 1 : 0
        return 0
    }
}

/// `host` as a site: a host name alone (no port, path or credentials, not an IP address), in
/// the parser's form (lowercase, IDNA-converted); nil when not given. With a URL that names a
/// host itself, `host` must be that same host: it says which site an address serves, and a
/// name URL has no address to explain.
private func siteTarget(_ host: String?, for url: HTTPTarget) throws(CallFailure) -> HTTPTarget? {
    guard let host else { return nil }
    let delimiters: Set<Character> = ["/", "?", "#", "@", "\\", ":", "[", "]", " ", "\t"]
    guard !host.isEmpty, !host.contains(where: delimiters.contains),
        case .success(let site) = HTTPTarget.parse("http://\(host)/"), !site.isIPLiteral
    else { throw CallFailure(-EINVAL, "host is not a host name: \(RPCError.quoted(host))") }
    if !url.isIPLiteral && site.host != url.host {
        throw CallFailure(
            -EINVAL, "host \(site.host) is for a url that holds an IP address, and \(url.url) names \(url.host)")
    }
    return site
}

/// What one request IP-direct is: the URL to hand libcurl, where it connects, and whether that
/// came from an expired answer.
struct IPDirectPlan {
    /// The URL as requested: the site's name in place of an IP literal given with a host, so the
    /// Host header, TLS SNI, the certificate check and the jar all use the name.
    let target: HTTPTarget
    /// `host:port:addr[,addr...]` for CURLOPT_RESOLVE; nil for an IP-literal URL without host.
    let resolveEntry: String?
    let stale: Bool

    /// `resolve` is the daemon's answer for a name (`allowStale` passed on); it is asked only when
    /// the URL names its host, never for an address the caller chose.
    init(
        given: HTTPTarget, site: HTTPTarget?, allowStale: Bool,
        resolve: (String, Bool) throws(CallFailure) -> ResolveResult
    ) throws(CallFailure) {
        if given.isIPLiteral {
            guard let site else {
                self.init(target: given, resolveEntry: nil, stale: false)
                return
            }
            let target = given.replacingHost(with: site)
            self.init(target: target, resolveEntry: target.resolveEntry(addresses: [given.host]), stale: false)
            return
        }
        let answer = try resolve(given.host, allowStale)
        guard let entry = given.resolveEntry(addresses: answer.ipv4 + answer.ipv6) else {
            throw CallFailure(.rpc(.hostNotFound(given.host, reason: .noData)))
        }
        self.init(target: given, resolveEntry: entry, stale: answer.stale)
    }

    private init(target: HTTPTarget, resolveEntry: String?, stale: Bool) {
        self.target = target
        self.resolveEntry = resolveEntry
        self.stale = stale
    }
}

/// malloc'd copies of several strings (nil stays NULL), made all or none.
struct CStringCopies {
    let pointers: [UnsafeMutablePointer<CChar>?]

    init(_ strings: [String?]) throws(CallFailure) {
        var pointers: [UnsafeMutablePointer<CChar>?] = []
        for string in strings {
            guard let string else {
                pointers.append(nil)
                continue
            }
            guard let copy = strdup(string) else {
                for pointer in pointers { free(pointer) }
                throw CallFailure(-ENOMEM, "out of memory")
            }
            pointers.append(copy)
        }
        self.pointers = pointers
    }
}
