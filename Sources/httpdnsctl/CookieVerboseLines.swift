import HTTPDNSProtocol

/// What `-v` adds to curl's own lines about httpdnsctl's cookie work, as curl's engine adds
/// `Added cookie ...`: which cookies a request carries and what the daemon's jar did with each
/// `Set-Cookie` of the response. Cookie names only, never values: a value is a login session,
/// and verbose output gets pasted into bug reports.
enum CookieVerboseLines {
    /// `* httpdnsctl: sending cookies a, b to HOST` for a `Cookie` header value.
    static func sending(_ header: String, to host: String) -> String {
        let names = CurlRequest.cookiePairs(header).map { pair in
            pair.firstIndex(of: "=").map { printable(pair[..<$0]) } ?? "(nameless)"
        }
        return
            "* httpdnsctl: sending cookie\(names.count == 1 ? "" : "s") \(names.joined(separator: ", ")) to \(host)\n"
    }

    /// One line per `Set-Cookie` value: `* httpdnsctl: stored NAME for HOST`, `* httpdnsctl:
    /// rejected NAME (REASON)`, or, for one that arrived expired, `deleted NAME for HOST (expired)`.
    ///
    /// The result counts stored cookies without saying which: a value with `Max-Age` of 0 or less
    /// was not stored, one without a valid `Max-Age` but with `Expires` may have been (curl's
    /// date forms are left to the daemon), and the count settles those where it can.
    static func decisions(setCookie: [String], result: SetCookieResult) -> String {
        let rejected = Dictionary(
            result.rejected.map { ($0.index, $0.reason) }, uniquingKeysWith: { first, _ in first })
        var expired: Set<Int> = []
        var uncertain: [Int] = []
        for index in setCookie.indices where rejected[index] == nil {
            switch maxAge(of: setCookie[index]) {
            case let seconds? where seconds <= 0: expired.insert(index)
            case nil where !SetCookieFields(setCookie[index]).values("expires").isEmpty: uncertain.append(index)
            default: break
            }
        }
        let surelyStored = setCookie.count - rejected.count - expired.count - uncertain.count
        let storedUncertain = result.stored - surelyStored
        var text = ""
        for (index, value) in setCookie.enumerated() {
            let name = name(ofSetCookie: value)
            if let reason = rejected[index] {
                text += "* httpdnsctl: rejected \(name) (\(printable(Substring(reason))))\n"
            } else if expired.contains(index) || (uncertain.contains(index) && storedUncertain <= 0) {
                text += "* httpdnsctl: deleted \(name) for \(result.host) (expired)\n"
            } else if uncertain.contains(index) && storedUncertain < uncertain.count {
                text += "* httpdnsctl: stored or deleted \(name) for \(result.host) (by its Expires)\n"
            } else {
                text += "* httpdnsctl: stored \(name) for \(result.host)\n"
            }
        }
        return text
    }

    /// What httpdnsctl warns about without `-v`: one line per `Set-Cookie` value the jar refused,
    /// `cookie NAME from HOST rejected (REASON)`, names only, never values.
    static func rejections(setCookie: [String], result: SetCookieResult, from host: String) -> [String] {
        var seen: Set<Int> = []
        return result.rejected.compactMap { rejection in
            guard setCookie.indices.contains(rejection.index), seen.insert(rejection.index).inserted else { return nil }
            let name = name(ofSetCookie: setCookie[rejection.index])
            return "cookie \(name) from \(host) rejected (\(printable(Substring(rejection.reason))))"
        }
    }

    /// The cookie name of a `Set-Cookie` value, shown safely; `(nameless)` when it has none.
    static func name(ofSetCookie value: String) -> String {
        guard let name = SetCookieFields(value).name, !name.isEmpty else { return "(nameless)" }
        return printable(Substring(name))
    }

    /// The last valid `Max-Age` (RFC 6265bis 5.6.2: an optional `-` and digits), nil when none.
    static func maxAge(of value: String) -> Int? {
        var seconds: Int?
        for attributeValue in SetCookieFields(value).values("max-age") {
            let digits = attributeValue.hasPrefix("-") ? attributeValue.dropFirst() : Substring(attributeValue)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
            seconds = attributeValue.hasPrefix("-") ? -1 : (Int(digits) ?? Int.max)
        }
        return seconds
    }

    /// `text` with control characters shown as `?`, so that a name cannot drive the terminal.
    static func printable(_ text: Substring) -> String {
        String(text.map { $0.isASCII && ($0.asciiValue! < 0x20 || $0.asciiValue! == 0x7F) ? "?" : $0 })
    }
}
