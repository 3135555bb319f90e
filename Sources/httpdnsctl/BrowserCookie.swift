import Glibc
import HTTPDNSProtocol

/// One cookie in the shape both sides share: what the daemon's jar holds (`listCookies`) and
/// what the browser's store holds (`Storage.getCookies`), compared to tell who changed what.
struct BrowserCookie: Equatable {
    var name: String
    var value: String
    /// Without a leading dot.
    var domain: String
    var hostOnly: Bool
    var path: String
    /// Unix seconds; nil for a session cookie.
    var expires: Int64?
    var secure: Bool
    var httpOnly: Bool
    var sameSite: CookieSameSite

    /// Expiry dates may differ by this much and still be the same cookie: the browser keeps
    /// fractions of a second, and a Max-Age is counted from a slightly different moment on each side.
    static let expiryTolerance: Int64 = 2

    var key: CookieKey { CookieKey(domain: domain, path: path, name: name) }
}

// The conversions live in an extension so that the struct keeps its memberwise initializer.
extension BrowserCookie {
    /// A cookie of the daemon's jar.
    init(_ cookie: Cookie) {
        self.init(
            name: cookie.name, value: cookie.value, domain: cookie.domain, hostOnly: cookie.hostOnly, path: cookie.path,
            expires: cookie.expires, secure: cookie.secure, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite)
    }

    /// A `Network.Cookie` of the browser's store; nil for a partitioned cookie (the jar has no
    /// partition keys to put it under) or one that lacks a field.
    init?(devTools json: JSON) {
        guard let name = json["name"]?.stringValue, let value = json["value"]?.stringValue,
            let domain = json["domain"]?.stringValue, let path = json["path"]?.stringValue,
            json["partitionKey"] == nil
        else { return nil }
        let session = json["session"]?.boolValue ?? true
        let expires = json["expires"]?.numberValue?.doubleValue ?? -1
        let sameSite: CookieSameSite =
            switch json["sameSite"]?.stringValue {
            case "Strict": .strict
            case "Lax": .lax
            case "None": .none
            default: .default
            }
        self.init(
            name: name, value: value, domain: domain.hasPrefix(".") ? String(domain.dropFirst()) : domain,
            hostOnly: !domain.hasPrefix("."), path: path,
            expires: session || expires < 0 ? nil : Int64(expires.rounded()),
            secure: json["secure"]?.boolValue ?? false, httpOnly: json["httpOnly"]?.boolValue ?? false,
            sameSite: sameSite)
    }

    /// The same cookie, allowing `expiryTolerance` between the expiry dates.
    func matches(_ other: BrowserCookie) -> Bool {
        var this = self
        var that = other
        guard (this.expires == nil) == (that.expires == nil) else { return false }
        if let a = this.expires, let b = that.expires, abs(a - b) <= Self.expiryTolerance {
            this.expires = nil
            that.expires = nil
        }
        return this == that
    }

    /// The domain as the browser writes it: a domain cookie's with a leading dot, a host-only
    /// cookie's without (CDP has no host-only field).
    var devToolsDomain: String { hostOnly ? domain : "." + domain }

    /// A `Network.CookieParam` for `Storage.setCookies` (sameSite `default` is left out, which
    /// the browser reads as its own default, as the jar does).
    var cookieParam: JSON {
        var param: JSONObject = [
            "name": .string(name), "value": .string(value), "domain": .string(devToolsDomain), "path": .string(path),
            "secure": .bool(secure), "httpOnly": .bool(httpOnly),
        ]
        switch sameSite {
        case .strict: param.append("sameSite", "Strict")
        case .lax: param.append("sameSite", "Lax")
        case .none: param.append("sameSite", "None")
        case .default: break
        }
        if let expires { param.append("expires", .int64(expires)) }
        return .object(param)
    }

    /// A `Network.CookieParam` that removes this cookie from the browser's store: the same
    /// identity, expired long ago.
    var expiredCookieParam: JSON {
        var expired = self
        expired.value = ""
        expired.expires = 1
        return expired.cookieParam
    }

    /// A `Set-Cookie` value and the URL to store it for with `handleSetCookie`, so that the
    /// jar ends up with this cookie as the browser has it (or, `expired`, without it). The URL
    /// is https so that a Secure cookie is accepted; the cookie's own domain is its host.
    func setCookie(expired: Bool = false) -> (url: String, header: String) {
        var header = name.isEmpty ? value : "\(name)=\(value)"
        if !hostOnly { header += "; Domain=\(domain)" }
        header += "; Path=\(path)"
        if expired {
            header += "; Max-Age=0"
        } else if let expires {
            header += "; Expires=\(Self.httpDate(expires))"
        }
        if secure { header += "; Secure" }
        if httpOnly { header += "; HttpOnly" }
        switch sameSite {
        case .strict: header += "; SameSite=Strict"
        case .lax: header += "; SameSite=Lax"
        case .none: header += "; SameSite=None"
        case .default: break
        }
        let host = domain.contains(":") ? "[\(domain)]" : domain
        return ("https://\(host)\(path.hasPrefix("/") ? path : "/")", header)
    }

    /// RFC 9110's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
