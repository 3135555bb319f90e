import HTTPDNSClient

/// What a `httpdnsctl curl` command line asks for, and the curl arguments of each hop.
///
/// httpdnsctl runs curl once per hop and follows redirects itself, so that every host is
/// resolved through the daemon and every hop's cookies go through the jar. The user's options
/// pass through unchanged except those httpdnsctl has to take over (following, the header dump,
/// `--write-out`, `--stderr`, the URL, cookie strings and headers) and those a redirect changes
/// (the method and body, credentials for another origin, `-O`'s file name, `--referer ;auto`).
struct CurlRequest {
    let commandLine: CurlCommandLine
    /// The URL given (with `http://` added when it had no scheme, as curl does).
    let url: HTTPTarget
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
    /// `-i`.
    let include: Bool
    /// The file the body goes to (`-o`, or `-O`'s name), with `--output-dir`; nil for standard output.
    let outputFile: String?
    /// Whether curl reports errors (`-s` without `-S` silences them), for httpdnsctl's own.
    let reportsErrors: Bool

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
    ]
    /// What curl prints when it only shows help or its version: nothing to resolve.
    static let informationOptions: Set<String> = ["help", "version", "manual"]

    /// Reads the command line after `httpdnsctl curl`. `readFile` reads `-w @file` (tests inject it).
    init(_ arguments: [String], readFile: (String) -> String? = LocalFile.readText) throws(UsageError) {
        var commandLine = try CurlCommandLine(arguments)
        fallback = commandLine.options.contains { !$0.known && $0.name == "--fallback" }
        commandLine.elements.removeAll { $0 == .option(CurlOption("--fallback", known: false)) }
        if commandLine.has("next") { throw UsageError("curl: one URL per command; --next is not supported") }
        let urls = commandLine.urls + commandLine.all("url")
        guard urls.count == 1 else {
            throw UsageError(urls.isEmpty ? "curl: no URL given" : "curl: one URL at a time, not \(urls.count)")
        }
        var text = urls[0]
        if !Self.hasScheme(text) {
            text = (commandLine.last("proto-default") ?? "http") + "://" + text
        }
        switch HTTPTarget.parse(text) {
        case .success(let url):
            self.url = url
        case .failure(.notHTTP):
            throw UsageError("curl: \(urls[0]) is not an http or https URL with a host")
        case .failure(.ambiguous):
            throw UsageError(
                "curl: \(urls[0]) names its host ambiguously (curl and the URL Standard would reach different hosts)")
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

    /// Whether `text` starts with a scheme and `://` (curl adds `http://` to anything else).
    static func hasScheme(_ text: String) -> Bool {
        guard let separator = text.firstRange(of: "://") else { return false }
        let scheme = text[..<separator.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The method of `hop`'s request.
    func method(of hop: Hop) -> String { hop.bodyDropped ? "GET" : initialMethod }

    /// The method of the first request, as curl picks it.
    var initialMethod: String {
        if let method = commandLine.last("request") { return method }
        if commandLine.flag("head") { return "HEAD" }
        if commandLine.has(
            "data", "data-ascii", "data-binary", "data-raw", "data-urlencode", "json", "form", "form-string")
        {
            return commandLine.flag("get") ? "GET" : "POST"
        }
        return commandLine.has("upload-file") ? "PUT" : "GET"
    }

    /// Whether a redirect with `status` after a request with `method` turns it into a body-less
    /// GET (RFC 9110 section 15.4: 301 and 302 after POST, 303 after anything but GET and HEAD;
    /// 307 and 308 keep both). `--post301`, `--post302`, `--post303` keep POST, as in curl.
    func dropsBody(status: Int, method: String) -> Bool {
        switch status {
        case 301: return method == "POST" && !commandLine.flag("post301")
        case 302: return method == "POST" && !commandLine.flag("post302")
        case 303: return method != "GET" && method != "HEAD" && !(method == "POST" && commandLine.flag("post303"))
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
        /// A file holding the merged `Cookie:` header line, nil for none. A file (curl's
        /// `-H @FILE`), not an argument: other local users can read a process's arguments.
        var cookieHeaderFile: String?
        var dumpHeaderPath: String
        /// The rewritten `--write-out` format, when the user gave one.
        var writeOut: String?
        /// `-D -` with the body on standard output is curl's `-i`.
        var include = false
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
            if hop.redirects > 0 && commandLine.flag("get") && (option.name == "get" || Self.isData(option)) {
                continue  // -G put the data into the first URL's query; a Location replaces it
            }
            if hop.bodyDropped && (option.name == "request" || option.name == "get" || Self.isData(option)) {
                continue
            }
            if !sameOrigin && (option.name == "user" || option.name == "oauth2-bearer") { continue }
            if option.name == "header", let field = Self.headerName(option.value ?? "") {
                if field == "cookie" { continue }
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
        if let file = additions.cookieHeaderFile { arguments += ["--header", "@" + file] }
        arguments += ["--dump-header", additions.dumpHeaderPath]
        if let format = additions.writeOut { arguments += ["--write-out", format] }
        // curl may follow nothing itself: with --max-redirs 0 it stops at a redirect (exit 47)
        // and skips its body, as curl -L does for every redirect it follows.
        arguments += follow ? ["--location", "--max-redirs", "0"] : ["--no-location"]
        arguments += ["--globoff", "--url", hop.target.url]
        return arguments
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
