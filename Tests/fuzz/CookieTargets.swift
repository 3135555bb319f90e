// Targets over the cookie parsers: Set-Cookie (and the jar's storage model behind it), cookie dates,
// the Netscape cookies.txt import and Playwright's storageState import.

import HTTPDNSProtocol

@testable import HTTPDNSCore

let cookieTargets = [
    FuzzTarget(name: "set-cookie", summary: "SetCookieParser and the jar: serialize-then-parse, limits, no CTLs") {
        checkSetCookie($0)
    },
    FuzzTarget(name: "cookie-date", summary: "CookieDate: accepted dates are real, in range, and re-parse when written")
    {
        checkCookieDate($0)
    },
    FuzzTarget(name: "netscape", summary: "cookies.txt import: limits held, export re-imports whole and unchanged") {
        checkNetscape($0)
    },
    FuzzTarget(name: "storage-state", summary: "storageState import: limits held, what it wrote re-imports whole") {
        checkStorageState($0)
    },
]

/// A fixed clock (2026-01-01T00:00:00Z), so expiry decisions are reproducible.
private let now: Int64 = 1_767_225_600
private let limits = CookieJarLimits(maxPerDomain: 4, maxTotal: 8)

/// Each line is one Set-Cookie value. Each parses to what it says: written back out and parsed again it
/// is the same cookie. Then all of them go through the jar for two requests (a host name over https, and
/// an IP over http normalized to that host), which must keep its limits and never store a cookie it could
/// not send back safely.
private func checkSetCookie(_ bytes: UnsafeBufferPointer<UInt8>) {
    // Strings reach the parser from JSON, so they are always valid UTF-8.
    let headers = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).prefix(16).map {
        String(decoding: $0, as: UTF8.self)
    }
    for header in headers {
        guard case .success(let cookie) = SetCookieParser.parse(header) else { continue }
        checkParsedCookie(cookie)
        let written = serialize(cookie)
        guard case .success(let again) = SetCookieParser.parse(written) else {
            fatalError("written cookie \(written.debugDescription) is refused")
        }
        require(
            sameCookie(again, cookie), "cookie changed in a write-then-parse round trip: \(written.debugDescription)")
    }

    let jar = CookieJar(rules: BasicDomainRules(), limits: limits)
    let requests: [(url: String, host: String?)] = [
        ("https://www.example.com/a/b", nil), ("http://203.0.113.7/a/", "www.example.com"),
    ]
    for (text, host) in requests {
        guard let url = RequestURL(text) else { fatalError("request URL \(text) does not parse") }
        guard let request = try? CookieRequest.normalizing(url, host: host, rules: jar.rules) else {
            fatalError("valid request host refused")
        }
        let outcome = jar.setCookies(headers, for: request, now: now)
        require(outcome.host == "www.example.com", "cookies filed under \(outcome.host)")
        require(outcome.stored + outcome.rejected.count <= headers.count, "more outcomes than cookies")
        let indices = outcome.rejected.map(\.index)
        require(Set(indices).count == indices.count, "a cookie rejected twice")
        require(indices.allSatisfy(headers.indices.contains), "rejection index outside the request")
        checkJar(jar, now: now)
        let header = jar.cookieHeader(for: request, now: now)
        require(!header.header.utf8.contains(where: SetCookieParser.isForbiddenControl), "CTL in a Cookie header")
        require(header.count <= jar.count, "more cookies sent than stored")
        require(header.count == 0 || !header.header.isEmpty, "cookies counted but none written")
    }
}

/// What section 5.6 guarantees of every parsed cookie.
private func checkParsedCookie(_ cookie: ParsedSetCookie) {
    let name = cookie.name.utf8
    let value = cookie.value.utf8
    require(name.count + value.count <= SetCookieParser.maxNameValueOctets, "name and value over 4096 octets")
    require(!name.contains(UInt8(ascii: ";")) && !name.contains(UInt8(ascii: "=")), "name holds ';' or '='")
    require(!value.contains(UInt8(ascii: ";")), "value holds ';'")
    for text in [cookie.name, cookie.value, cookie.domain ?? "", cookie.path ?? ""] {
        require(!text.utf8.contains(where: SetCookieParser.isForbiddenControl), "CTL in a parsed cookie")
    }
    // The domain is trimmed before its leading dot goes, so only these three are trimmed as stored.
    for text in [cookie.name, cookie.value, cookie.path ?? ""] {
        require(!isWSP(text.utf8.first) && !isWSP(text.utf8.last), "untrimmed \(text.debugDescription)")
    }
    if let domain = cookie.domain {
        require(!domain.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }, "Domain not lowercased")
        require(domain.utf8.count <= SetCookieParser.maxAttributeValueOctets, "Domain over the attribute cap")
    }
    if let path = cookie.path {
        require(path.utf8.count <= SetCookieParser.maxAttributeValueOctets, "Path over the attribute cap")
    }
}

private func isWSP(_ byte: UInt8?) -> Bool { byte == 0x20 || byte == 0x09 }

/// The cookie as a Set-Cookie value with one attribute of each kind it has.
private func serialize(_ cookie: ParsedSetCookie) -> String {
    var text = cookie.name + "=" + cookie.value
    if let expires = cookie.expires { text += "; Expires=" + imfFixdate(expires) }
    if let maxAge = cookie.maxAge { text += "; Max-Age=\(maxAge)" }
    // Parsing trims the value, then drops one leading dot: a domain that is empty or starts with
    // a dot or a space (`Domain=. x` is " x") comes back as it was when written after a dot;
    // any other without one, so that a domain of the most octets a value may hold (1024) fits.
    if let domain = cookie.domain {
        let needsDot = domain.utf8.first.map { [UInt8(ascii: "."), 0x20, 0x09].contains($0) } ?? true
        text += "; Domain=" + (needsDot ? "." : "") + domain
    }
    if let path = cookie.path { text += "; Path=" + path }
    if cookie.secure { text += "; Secure" }
    if cookie.httpOnly { text += "; HttpOnly" }
    if let sameSite = cookie.sameSite { text += "; SameSite=" + sameSite.rawValue }
    if cookie.partitioned { text += "; Partitioned" }
    return text
}

/// Equal as octets (String `==` would also equate canonically equivalent Unicode).
private func sameCookie(_ a: ParsedSetCookie, _ b: ParsedSetCookie) -> Bool {
    a == b && a.name.hasSameBytes(as: b.name) && a.value.hasSameBytes(as: b.value)
        && (a.domain ?? "").hasSameBytes(as: b.domain ?? "") && (a.path ?? "").hasSameBytes(as: b.path ?? "")
}

/// The jar's invariants, seen from outside: within its limits, and every cookie one that the storage model
/// could have stored and a Cookie header can carry.
private func checkJar(_ jar: CookieJar, now: Int64) {
    guard let cookies = try? jar.list(now: now) else { fatalError("list refused") }
    require(cookies.count == jar.count, "list and count disagree")
    require(jar.count <= jar.limits.maxTotal, "\(jar.count) cookies over MaxTotal=\(jar.limits.maxTotal)")
    var perBucket: [String: Int] = [:]
    for cookie in cookies {
        require(CookieJar.isStorable(cookie), "stored a cookie that is not storable")
        require(
            cookie.path.utf8.first == UInt8(ascii: "/"), "path \(cookie.path.debugDescription) does not start with /")
        require(jar.rules.canonicalHost(cookie.domain) == cookie.domain, "domain \(cookie.domain) not canonical")
        require(cookie.hostOnly || !jar.rules.isPublicSuffix(cookie.domain), "domain cookie on a public suffix")
        require(!cookie.isExpired(at: now), "listed an expired cookie")
        if let expires = cookie.expires {
            require(expires <= now + CookieJar.maxLifetimeSeconds, "expiry beyond 400 days")
        }
        perBucket[jar.rules.registrableDomain(cookie.domain) ?? cookie.domain, default: 0] += 1
    }
    require(perBucket.values.allSatisfy { $0 <= jar.limits.maxPerDomain }, "a domain over MaxPerDomain")
}

/// Accepted dates exist, lie between 1601 and 9999 (the algorithm's bounds), and parse back to the same
/// second when written as IMF-fixdate, asctime, and (for 1970 to 2069) RFC 850 with its two-digit year.
private func checkCookieDate(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let seconds = CookieDate.parse(bytes: bytes) else { return }
    require((firstCookieSecond...lastCookieSecond).contains(seconds), "date \(seconds) outside 1601...9999")
    let date = CalendarDate(unixSeconds: seconds)
    var forms = [imfFixdate(seconds), date.asctime]
    if (1970...2069).contains(date.year) { forms.append(date.rfc850) }
    for form in forms {
        require(CookieDate.parse(form) == seconds, "\(form) does not parse back to \(seconds)")
    }
}

/// 1601-01-01T00:00:00Z and 9999-12-31T23:59:59Z in Unix seconds.
private let firstCookieSecond: Int64 = -11_644_473_600
private let lastCookieSecond: Int64 = 253_402_300_799

/// A cookies.txt import keeps the jar within its limits and stores only sendable cookies; what the jar then
/// exports imports into an empty jar completely (nothing skipped or expired) and exports the same again.
private func checkNetscape(_ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    let jar = CookieJar(rules: BasicDomainRules(), limits: limits)
    let result = jar.importNetscape(text, now: now)
    require(jar.count <= result.imported, "more cookies than were imported")
    checkJar(jar, now: now)

    let export = jar.exportNetscape(now: now)
    let exported = export.text
    func records(_ text: String) -> [Substring] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_") }
    }
    let written = records(exported).count
    let tabbed = ((try? jar.list(now: now)) ?? []).filter {
        $0.name.utf8.contains(0x09) || $0.value.utf8.contains(0x09) || $0.path.utf8.contains(0x09)
    }
    require(written == jar.count - tabbed.count, "export wrote \(written) of \(jar.count) cookies")
    require(export.leftOut == tabbed.map(\.key), "left out \(export.leftOut), not the cookies holding a TAB")

    let copy = CookieJar(rules: BasicDomainRules(), limits: limits)
    let reimport = copy.importNetscape(exported, now: now)
    require(
        reimport == NetscapeImportResult(imported: written, skipped: 0, expired: 0),
        "the export re-imports as \(reimport), not \(written) cookies")
    let again = copy.exportNetscape(now: now)
    require(
        again.leftOut.isEmpty && records(again.text) == records(exported), "export, import, export changed the text")
}

/// Any text as storageState: the jar keeps its limits, and what it then writes (the export's
/// cookie objects) reads back to the same cookies.
private func checkStorageState(_ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    let jar = CookieJar(rules: BasicDomainRules(), limits: limits)
    guard let result = jar.importStorageState(text, now: now) else { return }
    require(jar.count <= result.imported, "more cookies than were imported")
    checkJar(jar, now: now)
    let cookies = (try? jar.list(now: now)) ?? []
    let written = cookies.filter(CookieJar.storageStateCanHold).map { CookieJar.storageStateObject($0).encodedString }
    let exported = CookieJar.storageStateStart + written.joined(separator: ",") + CookieJar.storageStateEnd
    let copy = CookieJar(rules: BasicDomainRules(), limits: limits)
    let reimport = copy.importStorageState(exported, now: now)
    require(
        reimport == NetscapeImportResult(imported: written.count, skipped: 0, expired: 0),
        "the export re-imports as \(String(describing: reimport)), not \(written.count) cookies")
}
