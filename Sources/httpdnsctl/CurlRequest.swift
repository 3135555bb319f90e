import HTTPDNSClient

/// What a `httpdnsctl curl` command line asks for, and the curl arguments of each hop.
///
/// httpdnsctl runs curl once per hop and follows redirects itself, so that every host is
/// resolved through the daemon and every hop's cookies go through the jar. The user's options
/// pass through unchanged except those httpdnsctl has to take over (following, the header dump,
/// `--write-out`, `--stderr`, `--cookie-jar`, the URL, cookie strings and headers) and those a
/// redirect changes (the method and body, credentials for another origin, the Host header for
/// another host, `-O`'s file name, `--referer ;auto`).
struct CurlRequest {
    let commandLine: CurlCommandLine
    /// The URL curl is run with first: the one given (with `http://` added when it had no scheme, as
    /// curl does), or for curl's IP-direct pattern the same URL on the site's name (see `pin`).
    let url: HTTPTarget
    /// curl's IP-direct pattern: a URL naming an IP address with `-H 'Host: NAME'` or `--host NAME`.
    /// curl is run on that URL with NAME in place of the address, and every request to NAME (any
    /// port, redirects included) connects to the address, so SNI, the certificate check, the Host
    /// header and the jar use NAME.
    let pin: Pin?
    /// `--fallback`: run curl plainly when the daemon is not reachable.
    let fallback: Bool
    /// `-L`/`--location` (or `--location-trusted`): follow redirects.
    let follow: Bool
    /// `--location-trusted`: credentials and the user's Cookie header go to other origins too.
    let trusted: Bool
    /// `--max-redirs`, curl's default 50; -1 means no limit.
    let maxRedirects: Int
    /// `-w`: the format, already read when given as `@file`.
    let writeOut: String?
    /// `-D`: `-` for standard output, else a file.
    let dumpHeader: String?
    /// `--stderr`: `-` for standard output, else a file.
    let standardError: String?
    /// `-c`: where the cookies of the whole chain go at the end, in curl's format; `-` for standard output.
    let cookieJar: String?
    /// `-v`: httpdnsctl says which cookies it sent and what the jar did with those it received.
    let verbose: Bool
    /// `-i`.
    let include: Bool
    /// The file the body goes to (`-o`, or `-O`'s name), with `--output-dir`; nil for standard output.
    let outputFile: String?
    /// Whether curl reports errors (`-s` without `-S` silences them), for httpdnsctl's own.
    let reportsErrors: Bool

    /// The site name an IP-literal URL was given for, and that address.
    struct Pin: Equatable {
        /// The host name, as the URL parser writes it.
        var host: String
        /// The IP address of the URL given (an IPv6 one without brackets).
        var address: String
    }

    /// Request header fields that describe a body (RFC 9110 section 15.4): dropped with the body
    /// when a redirect turns the request into a GET.
    static let bodyHeaderFields: Set<String> = [
        "content-type", "content-length", "content-encoding", "content-language", "content-location", "digest",
        "last-modified",
    ]
    static let dataOptions: Set<String> = [
        "data", "data-ascii", "data-binary", "data-raw", "data-urlencode", "json", "form", "form-string", "upload-file",
    ]
    /// Options httpdnsctl takes over on every hop.
    static let ownedOptions: Set<String> = [
        "location", "location-trusted", "follow", "max-redirs", "url", "write-out", "dump-header", "stderr",
        "cookie-jar",
    ]
    /// What curl prints when it only shows help or its version: nothing to resolve.
    static let informationOptions: Set<String> = ["help", "version", "manual"]

    /// Reads the command line after `httpdnsctl curl`. `readFile` reads `-w @file` (tests inject it).
    init(_ arguments: [String], readFile: (String) -> String? = LocalFile.readText) throws(UsageError) {
        let commandLine = try CurlCommandLine(arguments)
        // A word neither table knows goes to curl as typed (a newer curl may know it), unless it
        // is a near miss of a known option: then it is a usage error that names that option.
        for option in commandLine.options where !option.known {
            if let meant = CurlOptionTable.suggestion(for: option.name) {
                throw UsageError("curl: unknown option \(option.name) (did you mean \(meant)?)")
            }
        }
        fallback = commandLine.own("fallback") != nil
        if commandLine.has("next") { throw UsageError("curl: one URL per command; --next is not supported") }
        let urls = commandLine.urls + commandLine.all("url")
        guard urls.count == 1 else {
            throw UsageError(urls.isEmpty ? "curl: no URL given" : "curl: one URL at a time, not \(urls.count)")
        }
        var text = urls[0]
        if text.isEmpty { throw UsageError("curl: url: must not be empty") }
        if !Self.hasScheme(text) {
            text = (commandLine.last("proto-default") ?? "http") + "://" + text
        }
        let given: HTTPTarget
        switch HTTPTarget.parse(text) {
        case .success(let url):
            given = url
        case .failure(.notHTTP):
            throw UsageError("curl: \(urls[0]) is not an http or https URL with a host")
        case .failure(.ambiguous):
            throw UsageError(
                "curl: \(urls[0]) names its host ambiguously (curl and the URL Standard would reach different hosts)")
        }
        if let site = try Self.site(commandLine, for: given) {
            url = given.replacingHost(with: site)
            pin = Pin(host: site.host, address: given.host)
        } else {
            url = given
            pin = nil
        }
        self.commandLine = commandLine
        trusted = commandLine.flag("location-trusted")
        follow = commandLine.flag("location", "location-trusted", "follow")
        if let raw = commandLine.last("max-redirs") {
            guard let value = Int(raw), value >= -1 else { throw UsageError("curl: --max-redirs needs a number") }
            maxRedirects = value
        } else {
            maxRedirects = 50
        }
        if let format = commandLine.last("write-out"), format.hasPrefix("@") {
            let path = String(format.dropFirst())
            guard let contents = readFile(path) else {
                throw UsageError("curl: cannot read the --write-out file \(path)")
            }
            writeOut = contents
        } else {
            writeOut = commandLine.last("write-out")
        }
        dumpHeader = commandLine.last("dump-header")
        standardError = commandLine.last("stderr")
        cookieJar = commandLine.last("cookie-jar")
        verbose = commandLine.flag("verbose")
        include = commandLine.flag("include")
        reportsErrors = !commandLine.flag("silent") || commandLine.flag("show-error")
        let directory = commandLine.last("output-dir")
        func located(_ file: String) -> String {
            guard let directory, !file.hasPrefix("/") else { return file }
            return directory + "/" + file
        }
        if let output = commandLine.last("output") {
            outputFile = output == "-" ? nil : located(output)
        } else if commandLine.flag("remote-name", "remote-name-all"), let name = Self.remoteName(of: url) {
            outputFile = located(name)
        } else {
            outputFile = nil
        }
    }

    /// The site that `--host NAME` or the user's `-H 'Host: NAME[:PORT]'` names for an IP-literal
    /// URL: nil when there is none, or when the URL names a host (then a Host header goes to curl
    /// unchanged, as curl sends it, and `--host` is a usage error), or when the Host header names
    /// an address itself.
    static func site(_ commandLine: CurlCommandLine, for url: HTTPTarget) throws(UsageError) -> HTTPTarget? {
        let option = commandLine.own("host")
        let header = commandLine.all("header").last { headerName($0) == "host" }
            .map { String($0.drop { $0 != ":" && $0 != ";" }.dropFirst()).trimmingWhitespace() }
            .flatMap { $0.isEmpty ? nil : $0 }
        if option?.isEmpty == true { throw UsageError("curl: --host: must not be empty") }
        if let option, !url.isIPLiteral {
            throw UsageError("curl: --host \(option) is for a URL that names an IP address, not \(url.host)")
        }
        guard url.isIPLiteral, option != nil || header != nil else { return nil }
        func parsed(_ value: String, _ what: String) throws(UsageError) -> HTTPTarget {
            let delimiters: Set<Character> = ["/", "?", "#", "@", "\\", " ", "\t"]
            guard !value.isEmpty, !value.contains(where: delimiters.contains),
                case .success(let site) = HTTPTarget.parse("http://\(value)/")
            else { throw UsageError("curl: \(what) \(value) names no host") }
            return site
        }
        let fromHeader = try header.map { value throws(UsageError) in try parsed(value, "the Host header") }
        guard let option else {
            return fromHeader.flatMap { $0.isIPLiteral ? nil : $0 }
        }
        let site = try parsed(option, "--host")
        guard !site.isIPLiteral else { throw UsageError("curl: --host \(option) names an address, not a host name") }
        if let fromHeader, fromHeader.host != site.host {
            throw UsageError("curl: --host \(option) and the Host header \(header!) name different hosts")
        }
        return site
    }

    /// Whether `text` starts with a scheme and `://` (curl adds `http://` to anything else).
    static func hasScheme(_ text: String) -> Bool {
        guard let separator = text.firstRange(of: "://") else { return false }
        let scheme = text[..<separator.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The method of `hop`'s request: `-X` on every hop, as curl sends it even where a redirect
    /// made the request a GET without its body; else GET once a redirect did, else the first one's.
    func method(of hop: Hop) -> String {
        if let method = commandLine.last("request") { return method }
        return hop.bodyDropped && requestKind != .head ? "GET" : initialMethod
    }

    /// The method of the first request, as curl picks it.
    var initialMethod: String {
        if let method = commandLine.last("request") { return method }
        switch requestKind {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        }
    }

    /// What curl makes of the request whatever `-X` says (libcurl's `httpreq`): its redirect
    /// rules look at this, never at the custom method.
    enum RequestKind: Equatable {
        case get, head, post, put
    }

    /// curl's kind of the first request: `-I` HEAD, data or a form POST (GET with `-G`), `-T` PUT.
    var requestKind: RequestKind {
        if commandLine.flag("head") { return .head }
        if commandLine.has(
            "data", "data-ascii", "data-binary", "data-raw", "data-urlencode", "json", "form", "form-string")
        {
            return commandLine.flag("get") ? .get : .post
        }
        return commandLine.has("upload-file") ? .put : .get
    }

    /// The kind of `hop`'s request: a GET once a redirect dropped the body.
    func requestKind(of hop: Hop) -> RequestKind { hop.bodyDropped ? .get : requestKind }

    /// Whether a redirect with `status` after a request of `kind` drops the body and makes the
    /// request a GET, as curl 7.88 decides it: 301 and 302 after a POST (data or a form), unless
    /// `--post301`/`--post302`; 303 after anything but a GET or HEAD, unless a POST with
    /// `--post303`; 307 and 308 never. `-X` changes none of this (curl then sends the `-X`
    /// method without the body), and a PUT of `-T` keeps its body on 301 and 302.
    func dropsBody(status: Int, kind: RequestKind) -> Bool {
        switch status {
        case 301: return kind == .post && !commandLine.flag("post301")
        case 302: return kind == .post && !commandLine.flag("post302")
        case 303: return kind != .get && kind != .head && !(kind == .post && commandLine.flag("post303"))
        default: return false
        }
    }

    /// `-O`'s file name for `url`: the last path segment, as curl takes it from the URL given.
    static func remoteName(of url: HTTPTarget) -> String? {
        let path = url.path
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let name = String(path[path.index(after: slash)...])
        return name.isEmpty ? nil : name
    }

    /// One request of the chain.
    struct Hop {
        var target: HTTPTarget
        /// Redirects followed before this request.
        var redirects = 0
        /// Whether a redirect turned the request into a GET without a body.
        var bodyDropped = false
        /// The URL that redirected here, for `--referer ';auto'`.
        var referrer: String?
    }

    /// What httpdnsctl adds to one hop's curl command line.
    struct HopAdditions {
        var resolve: String?
        /// The merged Cookie value and the file that gives it to curl; nil for none.
        var cookies: CurlCookieFile?
        var dumpHeaderPath: String
        /// The rewritten `--write-out` format, when the user gave one.
        var writeOut: String?
        /// `-D -` with the body on standard output is curl's `-i`.
        var include = false
        /// Where this hop's curl writes its cookie jar, when the user asked for one (`-c`).
        var cookieJar: String?
        /// httpdnsctl sends the cookies of the user's `-b FILE`s itself (see
        /// `CurlCookieFileCookies`): curl is not given the files.
        var withoutCookieFiles = false
    }

    /// The arguments of curl for `hop`.
    func arguments(for hop: Hop, adding additions: HopAdditions) -> [String] {
        let sameOrigin = trusted || hop.target.isSameOrigin(as: url)
        // curl -L -O names the file after the URL given, not after the one redirected to.
        let renamed =
            hop.redirects > 0 && commandLine.last("output") == nil && commandLine.flag("remote-name", "remote-name-all")
            && !commandLine.flag("remote-header-name")
        var arguments: [String] = []
        for option in commandLine.options {
            if Self.ownedOptions.contains(option.name) || isCookieString(option) { continue }
            if additions.withoutCookieFiles && option.name == "cookie" { continue }
            if hop.redirects > 0 && commandLine.flag("get") && (option.name == "get" || Self.isData(option)) {
                continue  // -G put the data into the first URL's query; a Location replaces it
            }
            // curl keeps -X on every hop: only the body goes.
            if hop.bodyDropped && (option.name == "get" || Self.isData(option)) { continue }
            if !sameOrigin && (option.name == "user" || option.name == "oauth2-bearer") { continue }
            if option.name == "header", let field = Self.headerName(option.value ?? "") {
                if field == "cookie" { continue }
                // curl sends its user's Host header only to the first URL's host name.
                if field == "host" && hop.target.host != url.host { continue }
                if hop.bodyDropped && Self.bodyHeaderFields.contains(field) { continue }
                if !sameOrigin && field == "authorization" { continue }
            }
            if renamed && (option.name == "remote-name" || option.name == "remote-name-all") { continue }
            if option.name == "referer", let referrer = hop.referrer, option.value?.hasSuffix(";auto") == true {
                arguments += ["--referer", referrer]
                continue
            }
            arguments += option.arguments
        }
        if renamed, let name = Self.remoteName(of: url) { arguments += ["--output", name] }
        if additions.include && !include { arguments += ["--include"] }
        if let resolve = additions.resolve { arguments += ["--resolve", resolve] }
        if let cookies = additions.cookies { arguments += cookies.arguments }
        if let jar = additions.cookieJar { arguments += ["--cookie-jar", jar] }
        arguments += ["--dump-header", additions.dumpHeaderPath]
        if let format = additions.writeOut { arguments += ["--write-out", format] }
        // curl may follow nothing itself: with --max-redirs 0 it stops at a redirect (exit 47)
        // and skips its body, as curl -L does for every redirect it follows.
        arguments += follow ? ["--location", "--max-redirs", "0"] : ["--no-location"]
        arguments += ["--globoff", "--url", hop.target.url]
        return arguments
    }

    /// The `--resolve` entry that sends a request for `target` to the pinned address: for any port
    /// of the pinned host name; nil for another host.
    func pinnedResolveEntry(for target: HTTPTarget) -> String? {
        guard let pin, target.host == pin.host else { return nil }
        return target.resolveEntry(addresses: [pin.address])
    }

    /// curl's command line for `--fallback` (the daemon is not reachable), given the arguments
    /// this request was read from: the user's, without httpdnsctl's own options; for the IP-direct
    /// pattern, their options with the URL on the site's name and `--resolve` to the address, so
    /// curl alone still connects there with the site's name (and follows redirects itself).
    func plainArguments(_ original: [String]) -> [String] {
        guard pin != nil, let resolve = pinnedResolveEntry(for: url) else {
            return commandLine.curlArguments(of: original)
        }
        let options = commandLine.options.filter { $0.name != "url" }.flatMap(\.arguments)
        return options + (resolvesItself(url) ? [] : ["--resolve", resolve]) + ["--globoff", "--url", url.url]
    }

    /// The Cookie header for a hop: the user's own cookies (`-b NAME=VALUE` always, `-H Cookie:`
    /// for the first URL's origin) first, then the jar's, except names the user already gave.
    /// nil when there is nothing to send.
    func cookieHeader(jar: String, for hop: Hop) -> String? {
        var own = commandLine.options.filter(isCookieString).compactMap(\.value)
        if trusted || hop.target.isSameOrigin(as: url) {
            for header in commandLine.all("header") where Self.headerName(header) == "cookie" {
                own.append(String(header.drop { $0 != ":" && $0 != ";" }.dropFirst()))
            }
        }
        let ownPairs = own.flatMap(Self.cookiePairs)
        let ownNames = Set(ownPairs.map { $0.prefix { $0 != "=" } })
        let jarPairs = Self.cookiePairs(jar).filter { !ownNames.contains($0.prefix { $0 != "=" }) }
        let all = ownPairs + jarPairs
        return all.isEmpty ? nil : all.joined(separator: "; ")
    }

    /// Whether the user gave curl a cookie file (`-b FILE`): its cookie engine then sends that
    /// file's cookies for each request.
    var readsCookieFile: Bool {
        commandLine.options.contains { $0.name == "cookie" && !isCookieString($0) }
    }

    /// The files of `-b FILE` (`-b @FILE` too), in order.
    var cookieFiles: [String] {
        commandLine.options.filter { $0.name == "cookie" && !isCookieString($0) }.compactMap(\.value).map {
            $0.hasPrefix("@") ? String($0.dropFirst()) : $0
        }
    }

    /// Whether the user removed the Cookie header (`-H 'Cookie:'`), so none is sent.
    func suppressesCookies(for hop: Hop) -> Bool {
        guard trusted || hop.target.isSameOrigin(as: url) else { return false }
        return commandLine.all("header").contains { header in
            guard Self.headerName(header) == "cookie", let colon = header.firstIndex(of: ":") else { return false }
            return header[header.index(after: colon)...].allSatisfy { $0 == " " || $0 == "\t" }
        }
    }

    /// Whether some option reads standard input (`-d @-`, `-F f=@-`, `-T -`, `-H @-`): then a
    /// request that may be sent again after a 307 or 308 needs it kept.
    var readsStandardInput: Bool {
        commandLine.options.contains { option in
            guard let value = option.value else { return false }
            switch option.name {
            case "data", "data-ascii", "data-binary", "json", "header", "config": return value == "@-" || value == "-"
            case "data-urlencode": return value.hasSuffix("@-")
            case "form": return value.contains("=@-") || value.contains("=<-")
            case "upload-file": return value == "-" || value == "."
            default: return false
            }
        }
    }

    /// Whether the user gave their own `--resolve` for this host and port (theirs is kept).
    func resolvesItself(_ target: HTTPTarget) -> Bool {
        let key = "\(target.host):\(target.port):"
        return commandLine.all("resolve").contains { entry in
            let plain = entry.hasPrefix("+") ? String(entry.dropFirst()) : entry
            return plain.lowercased().hasPrefix(key)
        }
    }

    /// `-b` with a `NAME=VALUE` string (curl reads anything without `=` as a file name).
    private func isCookieString(_ option: CurlOption) -> Bool {
        option.name == "cookie" && option.value?.contains("=") == true
    }

    private static func isData(_ option: CurlOption) -> Bool { dataOptions.contains(option.name) }

    /// The lowercased field name of a `-H` value (`Name: value`, or `Name;` for an empty one);
    /// nil for `@file`.
    static func headerName(_ header: String) -> String? {
        guard !header.hasPrefix("@"), let end = header.firstIndex(where: { $0 == ":" || $0 == ";" }) else {
            return nil
        }
        return header[..<end].trimmingWhitespace().lowercased()
    }

    /// The `name=value` pairs of a Cookie header value, trimmed, empty ones left out.
    static func cookiePairs(_ header: String) -> [String] {
        header.split(separator: ";").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingWhitespace() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String { Substring(self).trimmingWhitespace() }
}
