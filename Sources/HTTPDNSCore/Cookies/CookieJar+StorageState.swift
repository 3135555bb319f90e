import HTTPDNSProtocol

/// Playwright's `storageState` JSON (`browser.new_context(storage_state=...)`): `cookies` with
/// `name`, `value`, `domain` (a leading dot for a domain cookie, none for a host-only one),
/// `path`, `expires` (Unix seconds, -1 for a session cookie), `httpOnly`, `secure` and `sameSite`
/// (`Strict`, `Lax` or `None`), and `origins` (local storage, which a cookie jar has none of).
extension CookieJar {
    /// What the text starts and ends with around its cookie objects.
    public static let storageStateStart = #"{"cookies":["#
    public static let storageStateEnd = #"],"origins":[]}"#

    /// Whether the format can hold the cookie: a partitioned (CHIPS) cookie has no place in it.
    public static func storageStateCanHold(_ cookie: Cookie) -> Bool { !cookie.partitioned }

    /// One cookie as a storageState object. A cookie without a valid SameSite attribute becomes
    /// `Lax`, as Playwright itself writes Chromium's (the browsers' default).
    public static func storageStateObject(_ cookie: Cookie) -> JSON {
        let sameSite: String
        switch cookie.sameSite {
        case .strict: sameSite = "Strict"
        case .none: sameSite = "None"
        case .lax, .default: sameSite = "Lax"
        }
        return .object([
            "name": .string(cookie.name), "value": .string(cookie.value),
            "domain": .string(cookie.hostOnly ? cookie.domain : "." + cookie.domain), "path": .string(cookie.path),
            "expires": .int(Int(clamping: cookie.expires ?? -1)), "httpOnly": .bool(cookie.httpOnly),
            "secure": .bool(cookie.secure), "sameSite": .string(sameSite),
        ])
    }

    /// Reads the `cookies` of a storageState text; `origins` is ignored (counted in the result's
    /// `skipped` only for malformed cookies). Nil when the text is not a storageState object.
    public func importStorageState(_ text: String, now: Int64) -> NetscapeImportResult? {
        guard let state = try? JSONParser.parse(text), let cookies = state["cookies"]?.arrayValue else { return nil }
        var result = NetscapeImportResult()
        for object in cookies {
            switch storageStateCookie(object, now: now) {
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

    private func storageStateCookie(_ object: JSON, now: Int64) -> NetscapeLine {
        guard let name = object["name"]?.stringValue, let value = object["value"]?.stringValue,
            let domainText = object["domain"]?.stringValue
        else { return .malformed }
        var domainField = Substring(domainText)
        let path = object["path"]?.stringValue ?? "/"
        let leadingDot = domainField.first == "."
        if leadingDot { domainField = domainField.dropFirst() }
        guard let domain = rules.canonicalHost(String(domainField)), path.utf8.first == UInt8(ascii: "/") else {
            return .malformed
        }
        let hostOnly = !leadingDot || IPLiteral.isIPLiteral(domain)
        if !hostOnly && rules.isPublicSuffix(domain) { return .malformed }
        var expires: Int64?
        if let number = object["expires"]?.numberValue?.doubleValue, number >= 0 {
            guard number < 1e15 else { return .malformed }
            let seconds = Int64(number.rounded(.up))
            if seconds <= now { return .expired }
            expires = min(seconds, now + Self.maxLifetimeSeconds)
        }
        let sameSite: CookieSameSite
        switch object["sameSite"]?.stringValue {
        case "Strict": sameSite = .strict
        case "Lax": sameSite = .lax
        case "None": sameSite = .none
        default: sameSite = .default
        }
        let cookie = Cookie(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: path, expires: expires,
            secure: object["secure"]?.boolValue ?? false, httpOnly: object["httpOnly"]?.boolValue ?? false,
            sameSite: sameSite, partitioned: false, created: now, creationIndex: 0, lastAccess: now)
        guard Self.isStorable(cookie) else { return .malformed }
        return .cookie(cookie)
    }
}
