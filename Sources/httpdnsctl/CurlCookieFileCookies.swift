import Glibc
import HTTPDNSClient

/// The cookies of the user's `-b FILE` (Netscape cookies.txt files) that curl 7.88's engine
/// sends with a request, in its order, for when httpdnsctl must send them itself.
///
/// curl puts its engine's cookies and its cookie string in one Cookie header. A value that cannot
/// be that cookie string (8200 bytes or more, curl's MAX_COOKIE_LINE, or without `=`, which curl
/// reads as a file name) can only go as a header of httpdnsctl's; then curl is not given the
/// files (its engine would send a second header) and the header starts with their cookies.
struct CurlCookieFileCookies {
    struct Cookie: Equatable {
        var domain: String
        var tailMatch: Bool
        /// As written; the matching uses curl's sanitized form.
        var path: String
        var secure: Bool
        /// Seconds since the epoch; 0 for a session cookie.
        var expires: Int64
        var name: String
        var value: String
        /// The line as the file has it, for the `-c` jar.
        var line: String
        var key: CurlCookieJar.Key { CurlCookieJar.Key(name: name, domain: domain, tailMatch: tailMatch, path: path) }
    }

    /// Every cookie of the files, in their order, a later one replacing an earlier one of the
    /// same key in its place (as curl's engine loads them).
    let cookies: [Cookie]

    /// Reads the cookie files; nil when one cannot be read or holds a line that is not a
    /// cookies.txt line (curl also takes `Set-Cookie:` lines there): then httpdnsctl does not
    /// take the files over.
    init?(files: [String], readFile: (String) -> String? = LocalFile.readText) {
        var cookies: [Cookie] = []
        var positions: [CurlCookieJar.Key: Int] = [:]
        for file in files {
            guard file != "-", let text = readFile(file) else { return nil }
            for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
                var line = Substring(raw)
                if line.hasSuffix("\r") { line = line.dropLast() }
                if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
                if line.hasPrefix("#") && !line.hasPrefix("#HttpOnly_") { continue }
                guard let cookie = Self.cookie(ofLine: line) else { return nil }
                if let position = positions[cookie.key] {
                    cookies[position] = cookie
                } else {
                    positions[cookie.key] = cookies.count
                    cookies.append(cookie)
                }
            }
        }
        self.cookies = cookies
    }

    /// A cookies.txt line: `[#HttpOnly_]domain TAB tailmatch TAB path TAB secure TAB expires TAB
    /// name [TAB value]`.
    static func cookie(ofLine line: Substring) -> Cookie? {
        let text = line.hasPrefix("#HttpOnly_") ? line.dropFirst("#HttpOnly_".count) : line
        let fields = text.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 6 || fields.count == 7, let expires = Int64(fields[4]) else { return nil }
        let domain = fields[0].hasPrefix(".") ? String(fields[0].dropFirst()) : fields[0]
        guard !domain.isEmpty else { return nil }
        return Cookie(
            domain: domain, tailMatch: fields[1].uppercased() == "TRUE", path: fields[2],
            secure: fields[3].uppercased() == "TRUE", expires: expires, name: fields[5],
            value: fields.count == 7 ? fields[6] : "", line: String(line))
    }

    /// The cookies curl sends to `target` at `now`, in curl's order: the longest path first,
    /// then the longest domain, the longest name, and the file's order.
    func sent(to target: HTTPTarget, now: Int64 = Int64(time(nil))) -> [Cookie] {
        let host = target.host.lowercased()
        // curl treats localhost and the loopback addresses as secure origins too.
        let secure = target.scheme == "https" || ["localhost", "127.0.0.1", "::1"].contains(host)
        let matching = cookies.enumerated().filter { _, cookie in
            guard cookie.expires == 0 || cookie.expires >= now, !cookie.secure || secure else { return false }
            let domain = cookie.domain.lowercased()
            let domainMatches =
                domain == host
                || (cookie.tailMatch && !target.isIPLiteral && host.hasSuffix("." + domain))
            return domainMatches && Self.pathMatches(cookie.path, target.path)
        }
        return matching.sorted { first, second in
            let (a, b) = (first.element, second.element)
            if a.path.utf8.count != b.path.utf8.count { return a.path.utf8.count > b.path.utf8.count }
            if a.domain.utf8.count != b.domain.utf8.count { return a.domain.utf8.count > b.domain.utf8.count }
            if a.name.utf8.count != b.name.utf8.count { return a.name.utf8.count > b.name.utf8.count }
            return first.offset < second.offset
        }.map(\.element)
    }

    /// curl's path match of a cookie's path (without quotes and a trailing `/`; `/` when it does
    /// not start with one) against a request path.
    static func pathMatches(_ cookiePath: String, _ requestPath: String) -> Bool {
        var path = Substring(cookiePath)
        if path.hasPrefix("\"") { path = path.dropFirst() }
        if path.hasSuffix("\"") { path = path.dropLast() }
        if !path.hasPrefix("/") { path = "/" }
        if path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        if path == "/" { return true }
        var request = Substring(requestPath.prefix { $0 != "?" && $0 != "#" })
        if !request.hasPrefix("/") { request = "/" }
        guard request.utf8.starts(with: path.utf8) else { return false }
        return request.utf8.count == path.utf8.count
            || request.utf8.dropFirst(path.utf8.count).first == UInt8(ascii: "/")
    }

    /// The Cookie header value: the files' cookies for `target` first, then `value`.
    func header(to target: HTTPTarget, then value: String, now: Int64 = Int64(time(nil))) -> String {
        (sent(to: target, now: now).map { "\($0.name)=\($0.value)" } + [value]).joined(separator: "; ")
    }

    /// The lines of the files' cookies that a `-c` jar of this hop's curl, which was not given
    /// the files, lacks: all but those the hop's `Set-Cookie` fields named (curl's jar has their
    /// new state) and those expired at `now`.
    func jarLines(except named: Set<CurlCookieJar.Key>, now: Int64 = Int64(time(nil))) -> [String] {
        cookies.filter { ($0.expires == 0 || $0.expires >= now) && !named.contains($0.key) }.map(\.line)
    }
}
