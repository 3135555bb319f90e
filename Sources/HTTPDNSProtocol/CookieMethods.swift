// The cookie methods: getCookieHeader, handleSetCookie, deleteCookies, listCookies,
// importCookies, exportCookies.

// MARK: getCookieHeader

public struct GetCookieHeaderParams: MethodParams {
    public var url: String
    public var host: String?
    public var forScript: Bool
    public var siteForCookies: String?
    public var topLevelNavigation: Bool

    public init(
        url: String, host: String? = nil, forScript: Bool = false, siteForCookies: String? = nil,
        topLevelNavigation: Bool = false
    ) {
        self.url = url
        self.host = host
        self.forScript = forScript
        self.siteForCookies = siteForCookies
        self.topLevelNavigation = topLevelNavigation
    }

    public init(_ params: Params) throws(RPCError) {
        let read = try Read(params) { String(decoding: $0, as: UTF8.self) }
        self.init(
            url: read.url, host: read.host, forScript: read.forScript, siteForCookies: read.siteForCookies,
            topLevelNavigation: read.topLevelNavigation)
    }

    /// The params with `url` made by `readURL` from its UTF-8, in the request's bytes when it
    /// holds no escape: the daemon parses the URL there, without building a `String` first.
    /// The members, their errors and their order are `init(_:)`'s, being its own.
    public struct Read<URLValue> {
        public var url: URLValue
        public var host: String?
        public var forScript: Bool
        public var siteForCookies: String?
        public var topLevelNavigation: Bool

        public init(_ params: Params, url readURL: (UnsafeBufferPointer<UInt8>) -> URLValue) throws(RPCError) {
            url = try params.withRequiredString("url", readURL)
            host = try params.optionalString("host")
            forScript = try params.optionalBool("forScript") ?? false
            siteForCookies = try params.optionalString("siteForCookies")
            topLevelNavigation = try params.optionalBool("topLevelNavigation") ?? false
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("url", .string(url))
        if let host { o.append("host", .string(host)) }
        if forScript { o.append("forScript", true) }
        if let siteForCookies { o.append("siteForCookies", .string(siteForCookies)) }
        if topLevelNavigation { o.append("topLevelNavigation", true) }
        return o
    }
}

public struct CookieHeaderResult: MethodResult {
    /// The `Cookie:` header value; "" when no cookie matches.
    public var header: String
    public var count: Int

    public init(header: String, count: Int) {
        self.header = header
        self.count = count
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"header":"#, to: &out)
        JSONWriter.string(header, to: &out)
        JSONWriter.raw(#","count":"#, to: &out)
        JSONWriter.integer(count, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let header = json["header"]?.stringValue, let count = json["count"]?.numberValue?.int64Value else {
            return nil
        }
        self.init(header: header, count: Int(count))
    }
}

// MARK: handleSetCookie

public struct HandleSetCookieParams: MethodParams {
    public var url: String
    public var host: String?
    public var setCookie: [String]

    public init(url: String, host: String? = nil, setCookie: [String]) {
        self.url = url
        self.host = host
        self.setCookie = setCookie
    }

    public init(_ params: Params) throws(RPCError) {
        let read = try Read(params) { String(decoding: $0, as: UTF8.self) }
        self.init(url: read.url, host: read.host, setCookie: read.setCookie)
    }

    /// The params with `url` made by `readURL` from its UTF-8, as `GetCookieHeaderParams.Read`.
    public struct Read<URLValue> {
        public var url: URLValue
        public var host: String?
        public var setCookie: [String]

        public init(_ params: Params, url readURL: (UnsafeBufferPointer<UInt8>) -> URLValue) throws(RPCError) {
            url = try params.withRequiredString("url", readURL)
            host = try params.optionalString("host")
            setCookie = try params.requiredStringArray("setCookie")
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("url", .string(url))
        if let host { o.append("host", .string(host)) }
        o.append("setCookie", .array(setCookie.map(JSON.string)))
        return o
    }
}

public struct SetCookieResult: MethodResult {
    public struct Rejection: Sendable, Equatable {
        /// Position in `setCookie`, from 0.
        public var index: Int
        /// `syntax`, `domain-mismatch`, `public-suffix`, ... (a string, so clients keep unknown reasons).
        public var reason: String

        public init(index: Int, reason: String) {
            self.index = index
            self.reason = reason
        }
    }

    /// The host name the cookies were stored under.
    public var host: String
    public var stored: Int
    public var rejected: [Rejection]

    public init(host: String, stored: Int, rejected: [Rejection]) {
        self.host = host
        self.stored = stored
        self.rejected = rejected
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"host":"#, to: &out)
        JSONWriter.string(host, to: &out)
        JSONWriter.raw(#","stored":"#, to: &out)
        JSONWriter.integer(stored, to: &out)
        JSONWriter.raw(#","rejected":["#, to: &out)
        for (i, rejection) in rejected.enumerated() {
            JSONWriter.raw(i == 0 ? #"{"index":"# : #",{"index":"#, to: &out)
            JSONWriter.integer(rejection.index, to: &out)
            JSONWriter.raw(#","reason":"#, to: &out)
            JSONWriter.string(rejection.reason, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw("]}", to: &out)
    }

    public init?(json: JSON) {
        guard let host = json["host"]?.stringValue, let stored = json["stored"]?.numberValue?.int64Value,
            let rejected = json["rejected"]?.arrayValue
        else { return nil }
        self.init(
            host: host, stored: Int(stored),
            rejected: rejected.compactMap { r in
                guard let i = r["index"]?.numberValue?.int64Value, let reason = r["reason"]?.stringValue else {
                    return nil
                }
                return Rejection(index: Int(i), reason: reason)
            })
    }
}

// MARK: deleteCookies

public struct DeleteCookiesParams: MethodParams {
    public enum Target: Sendable, Equatable {
        /// The cookies `getCookieHeader` would send to `url` (with `host` for an IP URL).
        case url(String, host: String?)
        /// Every cookie of the domain and its subdomains.
        case domain(String)
        case all
    }

    public var target: Target
    public var name: String?

    public init(target: Target, name: String? = nil) {
        self.target = target
        self.name = name
    }

    public init(_ params: Params) throws(RPCError) {
        let url = try params.optionalString("url")
        let domain = try params.optionalString("domain")
        let all = try params.optionalBool("all")
        name = try params.optionalString("name")
        let host = try params.optionalString("host")
        switch (url, domain, all) {
        case (let url?, nil, nil), (let url?, nil, false?):
            target = .url(url, host: host)
        case (nil, let domain?, nil), (nil, let domain?, false?):
            target = .domain(domain)
        case (nil, nil, true?):
            target = .all
        case (nil, nil, _):
            throw .invalidParams(field: "url", "exactly one of url, domain or all: true is required")
        default:
            // Name a member the caller actually sent: the second of the ones that clash.
            throw .invalidParams(
                field: url != nil && domain != nil ? "domain" : "all", "only one of url, domain or all may be given")
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        switch target {
        case .url(let url, let host):
            o.append("url", .string(url))
            if let host { o.append("host", .string(host)) }
        case .domain(let domain): o.append("domain", .string(domain))
        case .all: o.append("all", true)
        }
        if let name { o.append("name", .string(name)) }
        return o
    }
}

public struct DeleteCookiesResult: MethodResult {
    /// How many cookies were deleted.
    public var deleted: Int

    public init(deleted: Int) { self.deleted = deleted }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"deleted":"#, to: &out)
        JSONWriter.integer(deleted, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let deleted = nonNegativeInteger("deleted", in: json) else { return nil }
        self.deleted = deleted
    }
}

// MARK: listCookies

public struct ListCookiesParams: MethodParams {
    /// Only cookies of this domain and its subdomains; nil: every cookie of the caller's jar.
    public var domain: String?

    public init(domain: String? = nil) { self.domain = domain }

    public init(_ params: Params) throws(RPCError) {
        domain = try params.optionalString("domain")
    }

    public var json: JSONObject {
        var o = JSONObject()
        if let domain { o.append("domain", .string(domain)) }
        return o
    }
}

public struct ListCookiesResult: MethodResult {
    /// Without the jar's bookkeeping (`Cookie.write(to:)`).
    public var cookies: [Cookie]

    public init(cookies: [Cookie]) { self.cookies = cookies }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"cookies":["#, to: &out)
        for (i, cookie) in cookies.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            cookie.write(to: &out)
        }
        JSONWriter.raw("]}", to: &out)
    }

    /// nil when `cookies` is missing or one of its elements is not a cookie.
    public init?(json: JSON) {
        guard let elements = json["cookies"]?.arrayValue else { return nil }
        var cookies: [Cookie] = []
        cookies.reserveCapacity(elements.count)
        for element in elements {
            guard let cookie = Cookie(json: element) else { return nil }
            cookies.append(cookie)
        }
        self.cookies = cookies
    }
}

// MARK: importCookies / exportCookies

/// `importCookies` / `exportCookies` format; only Netscape cookies.txt exists.
public enum CookieFileFormat: String, Sendable {
    case netscape

    /// The optional `format` member (default netscape).
    static func read(_ params: Params) throws(RPCError) -> CookieFileFormat {
        guard let raw = try params.optionalString("format") else { return .netscape }
        guard let format = CookieFileFormat(rawValue: raw) else {
            throw .invalidParams(field: "format", "only \"netscape\" (cookies.txt) is supported")
        }
        return format
    }
}

public struct ImportCookiesParams: MethodParams {
    public var format: CookieFileFormat
    /// The whole cookies.txt text.
    public var data: String

    public init(format: CookieFileFormat = .netscape, data: String) {
        self.format = format
        self.data = data
    }

    public init(_ params: Params) throws(RPCError) {
        format = try CookieFileFormat.read(params)
        data = try params.requiredString("data")
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("format", .string(format.rawValue))
        o.append("data", .string(data))
        return o
    }
}

public struct ImportCookiesResult: MethodResult {
    /// How many cookies were imported.
    public var imported: Int

    public init(imported: Int) { self.imported = imported }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"imported":"#, to: &out)
        JSONWriter.integer(imported, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let imported = nonNegativeInteger("imported", in: json) else { return nil }
        self.imported = imported
    }
}

public struct ExportCookiesParams: MethodParams {
    public var format: CookieFileFormat

    public init(format: CookieFileFormat = .netscape) { self.format = format }

    public init(_ params: Params) throws(RPCError) {
        format = try CookieFileFormat.read(params)
    }

    public var json: JSONObject { ["format": .string(format.rawValue)] }
}

public struct ExportCookiesResult: MethodResult {
    /// The whole cookies.txt text.
    public var data: String
    /// The cookies the text leaves out because the format cannot hold them (a TAB in the name, value
    /// or path); on the wire only when there is one.
    public var leftOut: [CookieKey]

    public init(data: String, leftOut: [CookieKey] = []) {
        self.data = data
        self.leftOut = leftOut
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"data":"#, to: &out)
        JSONWriter.string(data, to: &out)
        Self.writeEnd(leavingOut: leftOut, to: &out)
    }

    /// What follows `data`'s closing quote: `leftOut` when a cookie was left out, and the closing
    /// brace (a streamed export writes `data` in pieces, then this).
    public static func writeEnd(leavingOut leftOut: [CookieKey], to out: inout JSONOutput) {
        if !leftOut.isEmpty {
            JSONWriter.raw(#","leftOut":["#, to: &out)
            for (i, key) in leftOut.enumerated() {
                JSONWriter.raw(i == 0 ? #"{"domain":"# : #",{"domain":"#, to: &out)
                JSONWriter.string(key.domain, to: &out)
                JSONWriter.raw(#","path":"#, to: &out)
                JSONWriter.string(key.path, to: &out)
                JSONWriter.raw(#","name":"#, to: &out)
                JSONWriter.string(key.name, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// nil without `data`, or with a `leftOut` element that is not a domain, path and name.
    public init?(json: JSON) {
        guard let data = json["data"]?.stringValue else { return nil }
        var leftOut: [CookieKey] = []
        for element in json["leftOut"]?.arrayValue ?? [] {
            guard let domain = element["domain"]?.stringValue, let path = element["path"]?.stringValue,
                let name = element["name"]?.stringValue
            else { return nil }
            leftOut.append(CookieKey(domain: domain, path: path, name: name))
        }
        self.init(data: data, leftOut: leftOut)
    }
}
