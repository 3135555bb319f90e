// The cookie methods: getCookieHeader, handleSetCookie, deleteCookies, listCookies,
// importCookies, exportCookies.

/// Params whose first member, `url`, is read in place: `url` made by `readURL` from its UTF-8, in
/// the request's bytes when it holds no escape (the daemon parses the URL there, without building a
/// `String` first), and the other members from the table. The members, their errors and their
/// order are `Members.init(_:)`'s.
public struct URLParams<Members: DescribedParams, URLValue> {
    public var url: URLValue
    /// The other members (its `url` left blank).
    public var members: Members

    /// Inlinable, so that the request path gets it specialized for its members and URL type: a
    /// generic call through the protocol's witnesses was a twentieth of a cookie lookup.
    @inlinable
    public init(_ params: Params, url readURL: (UnsafeBufferPointer<UInt8>) -> URLValue) throws(RPCError) {
        assert(Members.fields.first?.schema.name == "url", "url is the first member")
        url = try params.withRequiredString("url", readURL)
        members = try Members(params, afterFirst: ())
    }

    /// The URL and the other members, moved out: the request path takes them without a copy
    /// (a retain and a release of each of their strings).
    @inlinable
    public consuming func parts() -> (url: URLValue, members: Members) { (url, members) }
}

// MARK: getCookieHeader

public struct GetCookieHeaderParams: DescribedParams {
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

    /// The table's reading of the members after `url`, written out for the request path;
    /// MethodShapeTests holds it equal to `described(_:afterFirst:)`, errors included.
    public init(_ params: Params, afterFirst: Void) throws(RPCError) {
        // Nearly every lookup sends its URL alone: then there is nothing more to read.
        if params.memberCount == 1 && params.has("url") {
            self.init(url: "")
            return
        }
        // Read into locals and initialized once: assigned member by member after a throwing
        // call, the value was copied and destroyed twice (a retain and release of each string).
        let host = try params.optionalString("host")
        // An IP URL with its host name and nothing else (the other lookup): the rest keep their
        // defaults, unread.
        if params.memberCount == 2 && host != nil && params.has("url") {
            self.init(url: "", host: host)
            return
        }
        let forScript = try params.optionalBool("forScript") ?? false
        let siteForCookies = try params.optionalString("siteForCookies")
        let topLevelNavigation = try params.optionalBool("topLevelNavigation") ?? false
        self.init(
            url: "", host: host, forScript: forScript, siteForCookies: siteForCookies,
            topLevelNavigation: topLevelNavigation)
    }

    public static let blank = GetCookieHeaderParams(url: "")
    public static let fields: [ParamField<GetCookieHeaderParams>] = [
        .required("url", \.url),
        .optional("host", \.host),
        .optional("forScript", \.forScript, default: false, sendsDefault: false),
        .optional("siteForCookies", \.siteForCookies),
        .optional("topLevelNavigation", \.topLevelNavigation, default: false, sendsDefault: false),
    ]
}

public struct CookieHeaderResult: MethodResult, DescribedRecord {
    /// The `Cookie:` header value; "" when no cookie matches.
    public var header: String
    public var count: Int

    public init(header: String, count: Int) {
        self.header = header
        self.count = count
    }

    public static let blank = CookieHeaderResult(header: "", count: 0)
    public static let fields: [ResultField<CookieHeaderResult>] = [
        .string("header", \.header), .integer("count", \.count),
    ]

    /// The table's encoding, written byte by byte for the request path; MethodShapeTests holds it
    /// equal to `writeDescribed(to:)`.
    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"header":"#, to: &out)
        JSONWriter.string(header, to: &out)
        JSONWriter.raw(#","count":"#, to: &out)
        JSONWriter.integer(count, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

// MARK: handleSetCookie

public struct HandleSetCookieParams: DescribedParams {
    public var url: String
    public var host: String?
    public var setCookie: [String]

    public init(url: String, host: String? = nil, setCookie: [String]) {
        self.url = url
        self.host = host
        self.setCookie = setCookie
    }

    /// The table's reading of the members after `url`, written out for the request path;
    /// MethodShapeTests holds it equal to `described(_:afterFirst:)`, errors included.
    public init(_ params: Params, afterFirst: Void) throws(RPCError) {
        self.init(
            url: "", host: try params.optionalString("host"), setCookie: try params.requiredStringArray("setCookie"))
    }

    public static let blank = HandleSetCookieParams(url: "", setCookie: [])
    public static let fields: [ParamField<HandleSetCookieParams>] = [
        .required("url", \.url), .optional("host", \.host), .required("setCookie", \.setCookie),
    ]
}

public struct SetCookieResult: MethodResult, DescribedRecord {
    public struct Rejection: DescribedRecord {
        /// Position in `setCookie`, from 0.
        public var index: Int
        /// `syntax`, `domain-mismatch`, `public-suffix`, ... (a string, so clients keep unknown reasons).
        public var reason: String

        public init(index: Int, reason: String) {
            self.index = index
            self.reason = reason
        }

        public static let blank = Rejection(index: 0, reason: "")
        public static let fields: [ResultField<Rejection>] = [.integer("index", \.index), .string("reason", \.reason)]
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

    public static let blank = SetCookieResult(host: "", stored: 0, rejected: [])
    public static let fields: [ResultField<SetCookieResult>] = [
        .string("host", \.host), .integer("stored", \.stored), .objects("rejected", \.rejected),
    ]

    /// The table's encoding, written byte by byte for the request path; MethodShapeTests holds it
    /// equal to `writeDescribed(to:)`.
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

}

// MARK: deleteCookies

public struct DeleteCookiesParams: MethodParams {
    /// The members as sent, in the order the daemon reads them; `target` is made of them.
    struct Members: DescribedParams {
        var url: String? = nil
        var domain: String? = nil
        var all: Bool? = nil
        var name: String? = nil
        var host: String? = nil

        static let blank = Members()
        static let fields: [ParamField<Members>] = [
            .optional("url", \.url), .optional("domain", \.domain), .optional("all", \.all),
            .optional("name", \.name), .optional("host", \.host),
        ]
    }

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
        let members = try Members(params)
        name = members.name
        switch (members.url, members.domain, members.all) {
        case (let url?, nil, nil), (let url?, nil, false?):
            target = .url(url, host: members.host)
        case (nil, let domain?, nil), (nil, let domain?, false?):
            target = .domain(domain)
        case (nil, nil, true?):
            target = .all
        case (nil, nil, _):
            throw .invalidParams(field: "url", "exactly one of url, domain or all: true is required")
        case (let url, let domain, _):
            // Name a member the caller actually sent: the second of the ones that clash.
            throw .invalidParams(
                field: url != nil && domain != nil ? "domain" : "all", "only one of url, domain or all may be given")
        }
    }

    public var json: JSONObject {
        var members = Members(name: name)
        switch target {
        case .url(let url, let host):
            members.url = url
            members.host = host
        case .domain(let domain): members.domain = domain
        case .all: members.all = true
        }
        return members.json
    }

    public static var memberSchemas: [MemberSchema] { Members.memberSchemas }
}

public struct DeleteCookiesResult: MethodResult, DescribedRecord {
    /// How many cookies were deleted.
    public var deleted: Int

    public init(deleted: Int) { self.deleted = deleted }

    public static let blank = DeleteCookiesResult(deleted: 0)
    public static let fields: [ResultField<DeleteCookiesResult>] = [.integer("deleted", \.deleted, in: nonNegative)]
}

// MARK: listCookies

public struct ListCookiesParams: DescribedParams {
    /// Only cookies of this domain and its subdomains; nil: every cookie of the caller's jar.
    public var domain: String?

    public init(domain: String? = nil) { self.domain = domain }

    public static let blank = ListCookiesParams()
    public static let fields: [ParamField<ListCookiesParams>] = [.optional("domain", \.domain)]
}

public struct ListCookiesResult: MethodResult, DescribedRecord {
    /// Without the jar's bookkeeping (`Cookie.fields`).
    public var cookies: [Cookie]

    public init(cookies: [Cookie]) { self.cookies = cookies }

    public static let blank = ListCookiesResult(cookies: [])
    public static let fields: [ResultField<ListCookiesResult>] = [.objects("cookies", \.cookies)]
}

// MARK: importCookies / exportCookies

/// `importCookies` / `exportCookies` format: Netscape cookies.txt (curl, wget), or Playwright's
/// storageState JSON.
public enum CookieFileFormat: String, Sendable, CaseIterable {
    case netscape
    case storageState = "storage-state"
}

extension ParamField {
    /// The optional `format` member (default netscape).
    static func format(_ path: MemberPath<Root, CookieFileFormat>) -> Self {
        .optional(
            "format", path, default: .netscape,
            unknown: "\"netscape\" (cookies.txt) or \"storage-state\" (Playwright's storageState JSON)")
    }
}

public struct ImportCookiesParams: DescribedParams {
    public var format: CookieFileFormat
    /// The whole cookies.txt text.
    public var data: String

    public init(format: CookieFileFormat = .netscape, data: String) {
        self.format = format
        self.data = data
    }

    public static let blank = ImportCookiesParams(data: "")
    public static let fields: [ParamField<ImportCookiesParams>] = [.format(\.format), .required("data", \.data)]
}

public struct ImportCookiesResult: MethodResult, DescribedRecord {
    /// How many cookies were imported.
    public var imported: Int

    public init(imported: Int) { self.imported = imported }

    public static let blank = ImportCookiesResult(imported: 0)
    public static let fields: [ResultField<ImportCookiesResult>] = [.integer("imported", \.imported, in: nonNegative)]
}

public struct ExportCookiesParams: DescribedParams {
    public var format: CookieFileFormat

    public init(format: CookieFileFormat = .netscape) { self.format = format }

    public static let blank = ExportCookiesParams()
    public static let fields: [ParamField<ExportCookiesParams>] = [.format(\.format)]
}

public struct ExportCookiesResult: MethodResult, DescribedRecord {
    /// The whole cookies.txt text.
    public var data: String
    /// The cookies the text leaves out because the format cannot hold them (a TAB in the name, value
    /// or path); on the wire only when there is one.
    public var leftOut: [CookieKey]

    public init(data: String, leftOut: [CookieKey] = []) {
        self.data = data
        self.leftOut = leftOut
    }

    public static let blank = ExportCookiesResult(data: "")
    public static let fields: [ResultField<ExportCookiesResult>] = [
        .string("data", \.data), .objects("leftOut", \.leftOut, omittedWhenEmpty: true),
    ]

    /// What follows `data`'s closing quote: the members after it, and the closing brace (a
    /// streamed export writes `data` in pieces, then this).
    public static func writeEnd(leavingOut leftOut: [CookieKey], to out: inout JSONOutput) {
        var first = false
        ExportCookiesResult(data: "", leftOut: leftOut).writeMembers(fields.dropFirst(), first: &first, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

extension CookieKey: DescribedRecord {
    public static let blank = CookieKey(domain: "", path: "", name: "")
    public static let fields: [ResultField<CookieKey>] = [
        .string("domain", \.domain), .string("path", \.path), .string("name", \.name),
    ]
}
