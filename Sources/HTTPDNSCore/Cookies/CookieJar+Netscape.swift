import HTTPDNSProtocol

/// The Netscape `cookies.txt` format read and written by curl (`-b`/`-c`), wget and
/// Python's `http.cookiejar.MozillaCookieJar`: one cookie per line, seven TAB-separated
/// fields `domain includeSubdomains path secure expiry name value`, `#` comments, and
/// curl's `#HttpOnly_` prefix on the domain of HttpOnly cookies.
extension CookieJar {
    /// The first line curl and Python write (Python refuses files without it).
    public static let netscapeHeader = "# Netscape HTTP Cookie File"
    private static let httpOnlyPrefix = "#HttpOnly_"

    /// Writes every unexpired cookie, sorted like `list`, and leaves out (and names) those the
    /// format cannot hold. Session cookies get expiry 0.
    public func exportNetscape(now: Int64) -> NetscapeExport {
        let cookies = (try? list(domain: nil, now: now)) ?? []
        let lines = cookies.map(Self.netscapeLine)
        let leftOut = zip(cookies, lines).compactMap { cookie, line in line == nil ? cookie.key : nil }
        var text = Self.netscapeFileStart(leavingOut: leftOut.count)
        for case let line? in lines { text += line }
        return NetscapeExport(text: text, leftOut: leftOut)
    }

    /// What a cookies.txt file starts with: the header line, and a comment saying how many cookies
    /// were left out, if any (readers skip comments).
    public static func netscapeFileStart(leavingOut leftOut: Int) -> String {
        var text = netscapeHeader + "\n# Written by httpdnsd. Edit with care.\n"
        if leftOut > 0 {
            text +=
                "# Left out: \(leftOut) cookie\(leftOut == 1 ? "" : "s") holding a TAB in the name, value or path.\n"
        }
        return text + "\n"
    }

    /// Whether a cookies.txt line can hold the cookie: no TAB in its name, value or path.
    public static func netscapeCanHold(_ cookie: Cookie) -> Bool {
        !holdsTab(cookie.name) && !holdsTab(cookie.value) && !holdsTab(cookie.path)
    }

    /// Eight bytes a step, in place: an export checks every value of a full jar on the loop.
    private static func holdsTab(_ string: String) -> Bool {
        let found = string.utf8.withContiguousStorageIfAvailable { bytes in
            ByteWords.firstIndex(in: bytes, flags: { ByteWords.equal($0, 0x09) }, isMatch: { $0 == 0x09 }) != nil
        }
        return found ?? string.utf8.contains(0x09)
    }

    /// One cookie's line, ended by LF; nil when the format cannot hold the cookie: a TAB in its
    /// name, value or path, which curl's and Python's readers take for a field separator (RFC
    /// 6265bis allows one inside a value, and the jar keeps it; CR and LF never get into the jar).
    public static func netscapeLine(_ cookie: Cookie) -> String? {
        guard netscapeCanHold(cookie) else { return nil }
        let domain = (cookie.httpOnly ? httpOnlyPrefix : "") + (cookie.hostOnly ? "" : ".") + cookie.domain
        let fields = [
            domain, cookie.hostOnly ? "FALSE" : "TRUE", cookie.path, cookie.secure ? "TRUE" : "FALSE",
            String(cookie.expires ?? 0), cookie.name, cookie.value,
        ]
        return fields.joined(separator: "\t") + "\n"
    }

    /// Reads cookies from Netscape text. Malformed lines are skipped and counted; so are
    /// cookies that could not be stored (an invalid domain, a public suffix as a domain,
    /// control characters, a full jar). Expired cookies are skipped without counting.
    /// Imported cookies replace stored ones with the same name, domain and path.
    public func importNetscape(_ text: String, now: Int64) -> NetscapeImportResult {
        var result = NetscapeImportResult()
        // Split on LF bytes: as Characters, "\r\n" is one grapheme and would not split.
        for rawLine in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: true) {
            var line = rawLine
            if line.last == 0x0D { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            var httpOnly = false
            if line.starts(with: Self.httpOnlyPrefix.utf8) {
                httpOnly = true
                line = line.dropFirst(Self.httpOnlyPrefix.utf8.count)
            } else if line.first == UInt8(ascii: "#") {
                continue
            }
            switch parseNetscapeLine(String(decoding: line, as: UTF8.self), httpOnly: httpOnly, now: now) {
            case .cookie(let cookie):
                if insertImported(cookie, now: now) { result.imported += 1 } else { result.skipped += 1 }
            case .expired:
                result.expired += 1
            case .malformed:
                result.skipped += 1
            }
        }
        return result
    }

    enum NetscapeLine {
        case cookie(Cookie)
        case expired
        case malformed
    }

    func parseNetscapeLine(_ line: String, httpOnly: Bool, now: Int64) -> NetscapeLine {
        // The value is the last field and keeps any TABs it contains (other writers may leave them in).
        let fields = line.utf8.split(separator: 0x09, maxSplits: 6, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard fields.count == 7 else { return .malformed }
        var domainField = Substring(fields[0])
        let leadingDot = domainField.first == "."
        if leadingDot { domainField = domainField.dropFirst() }
        guard let flag = Self.netscapeBool(fields[1]), let secure = Self.netscapeBool(fields[3]),
            let expiry = Int64(fields[4]), expiry >= 0,
            let domain = rules.canonicalHost(String(domainField)),
            fields[2].utf8.first == UInt8(ascii: "/")
        else { return .malformed }
        let hostOnly = !(flag || leadingDot) || IPLiteral.isIPLiteral(domain)
        // A domain cookie on a public suffix would be a supercookie; the HTTP path refuses it.
        if !hostOnly && rules.isPublicSuffix(domain) { return .malformed }
        if expiry != 0 && expiry <= now { return .expired }
        let cookie = Cookie(
            name: fields[5], value: fields[6], domain: domain, hostOnly: hostOnly, path: fields[2],
            expires: expiry == 0 ? nil : min(expiry, now + Self.maxLifetimeSeconds), secure: secure,
            httpOnly: httpOnly, sameSite: .default, partitioned: false, created: now, creationIndex: 0,
            lastAccess: now)
        guard Self.isStorable(cookie) else { return .malformed }
        return .cookie(cookie)
    }

    private static func netscapeBool(_ field: String) -> Bool? {
        switch field.uppercased() {
        case "TRUE": return true
        case "FALSE": return false
        default: return nil
        }
    }
}

/// What `CookieJar.exportNetscape` wrote.
public struct NetscapeExport: Sendable, Equatable {
    /// The whole cookies.txt text.
    public var text: String
    /// The cookies it leaves out (a TAB in the name, value or path), in `list` order.
    public var leftOut: [CookieKey]

    public init(text: String, leftOut: [CookieKey] = []) {
        self.text = text
        self.leftOut = leftOut
    }
}

/// What `CookieJar.importNetscape` did.
public struct NetscapeImportResult: Sendable, Equatable {
    /// Cookies stored.
    public var imported = 0
    /// Lines that are not a usable cookie.
    public var skipped = 0
    /// Well-formed cookies that had already expired.
    public var expired = 0

    public init(imported: Int = 0, skipped: Int = 0, expired: Int = 0) {
        self.imported = imported
        self.skipped = skipped
        self.expired = expired
    }
}
