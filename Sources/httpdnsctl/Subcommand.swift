import HTTPDNSClient
import HTTPDNSProtocol

/// Why a subcommand failed after its arguments were accepted.
enum CommandFailure: Error {
    case client(ClientError)
    /// A local file could not be read or written; `exitCode` is 66 (EX_NOINPUT) or 73 (EX_CANTCREAT).
    case file(String, exitCode: Int32)
}

/// One subcommand of httpdnsctl: how it reads its arguments and what it prints.
protocol Subcommand {
    /// The words that select it (`["cookie", "get"]`).
    static var words: [String] { get }
    /// Its arguments after the words, for the usage text.
    static var synopsis: String { get }
    /// One line saying what it does.
    static var abstract: String { get }

    init(_ arguments: [String]) throws(UsageError)

    /// Runs against the daemon and returns what goes to standard output (`json`: the raw result, one line).
    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String
}

/// A subcommand that is one call whose result is shown as JSON or, by default, as text.
protocol SingleCallCommand: Subcommand {
    var method: Method { get }
    var params: JSONObject { get }
    /// The human form of `result`; nil when the result does not match the contract.
    func human(_ result: JSON) -> String?
}

extension SingleCallCommand {
    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String {
        let result: JSON
        do { result = try connection.call(method.rawValue, params: params) } catch { throw .client(error) }
        if json { return result.encodedString + "\n" }
        guard let text = human(result) else {
            throw .client(.malformedResponse("the \(method.rawValue) result does not match the contract"))
        }
        return text
    }
}

// MARK: resolve

struct ResolveCommand: SingleCallCommand {
    static let words = ["resolve"]
    static let synopsis = "HOST [--family ipv4|ipv6|both] [--no-stale] [--timeout MS]"
    static let abstract = "Resolve HOST through the daemon's cache and upstreams."

    let resolveParams: ResolveParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(
            arguments, spec: OptionSpec(flags: ["--no-stale"], valued: ["--family", "--timeout"]))
        let host = try parsed.positionals("HOST")[0]
        var family = AddressFamily.both
        if let raw = parsed.values["--family"] {
            guard let value = AddressFamily(rawValue: raw) else {
                throw UsageError("--family must be ipv4, ipv6 or both, not \(raw)")
            }
            family = value
        }
        var timeout: Int?
        if let raw = parsed.values["--timeout"] {
            guard let ms = Int64(raw), (1...ResolveParams.maxTimeoutMs).contains(ms) else {
                throw UsageError(
                    "--timeout must be milliseconds between 1 and \(ResolveParams.maxTimeoutMs), not \(raw)")
            }
            timeout = Int(ms)
        }
        resolveParams = ResolveParams(
            host: host, family: family, allowStale: !parsed.flags.contains("--no-stale"), timeoutMs: timeout)
    }

    var method: Method { .resolve }
    var params: JSONObject { resolveParams.json }

    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String {
        if json {
            do { return try connection.call(method.rawValue, params: params).encodedString + "\n" } catch {
                throw .client(error)
            }
        }
        // The typed call stretches the reply deadline past --timeout.
        do { return HumanFormat.resolve(try connection.resolve(resolveParams)) } catch { throw .client(error) }
    }

    func human(_ result: JSON) -> String? { ResolveResult(json: result).map(HumanFormat.resolve) }
}

struct ReverseCommand: SingleCallCommand {
    static let words = ["reverse"]
    static let synopsis = "ADDRESS"
    static let abstract = "Print the host names the daemon handed ADDRESS out for, to this user."

    let request: ReverseParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(arguments, spec: OptionSpec())
        request = ReverseParams(address: try parsed.positionals("ADDRESS")[0])
    }

    var method: Method { .reverse }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { ReverseResult(json: result).map(HumanFormat.reverse) }
}

// MARK: cookies

struct CookieGetCommand: SingleCallCommand {
    static let words = ["cookie", "get"]
    static let synopsis = "URL [--host H] [--for-script] [--site URL] [--top-level]"
    static let abstract = "Print the Cookie header value the jar holds for a request to URL."

    let request: GetCookieHeaderParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(
            arguments, spec: OptionSpec(flags: ["--for-script", "--top-level"], valued: ["--host", "--site"]))
        request = GetCookieHeaderParams(
            url: try parsed.positionals("URL")[0], host: parsed.values["--host"],
            forScript: parsed.flags.contains("--for-script"), siteForCookies: parsed.values["--site"],
            topLevelNavigation: parsed.flags.contains("--top-level"))
    }

    var method: Method { .getCookieHeader }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { CookieHeaderResult(json: result).map { $0.header + "\n" } }
}

struct CookieSetCommand: SingleCallCommand {
    static let words = ["cookie", "set"]
    static let synopsis = "URL 'SET-COOKIE VALUE'... [--host H]"
    static let abstract = "Store Set-Cookie header values received from URL."

    let request: HandleSetCookieParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(arguments, spec: OptionSpec(valued: ["--host"]))
        guard let url = parsed.positionals.first else { throw UsageError("missing URL") }
        let values = Array(parsed.positionals.dropFirst())
        guard !values.isEmpty else { throw UsageError("missing a Set-Cookie value") }
        request = HandleSetCookieParams(url: url, host: parsed.values["--host"], setCookie: values)
    }

    var method: Method { .handleSetCookie }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { SetCookieResult(json: result).map(HumanFormat.setCookie) }
}

struct CookieDeleteCommand: SingleCallCommand {
    static let words = ["cookie", "delete"]
    static let synopsis = "(--url URL [--host H] | --domain D | --all) [--name N]"
    static let abstract = "Delete the cookies for a URL, of a domain and its subdomains, or all."

    let request: DeleteCookiesParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(
            arguments, spec: OptionSpec(flags: ["--all"], valued: ["--url", "--host", "--domain", "--name"]))
        _ = try parsed.positionals()
        let url = parsed.values["--url"]
        let domain = parsed.values["--domain"]
        let all = parsed.flags.contains("--all")
        let chosen = (url != nil ? 1 : 0) + (domain != nil ? 1 : 0) + (all ? 1 : 0)
        guard chosen == 1 else { throw UsageError("give exactly one of --url, --domain or --all") }
        if parsed.values["--host"] != nil && url == nil { throw UsageError("--host goes with --url") }
        let target: DeleteCookiesParams.Target
        if let url {
            target = .url(url, host: parsed.values["--host"])
        } else if let domain {
            target = .domain(domain)
        } else {
            target = .all
        }
        request = DeleteCookiesParams(target: target, name: parsed.values["--name"])
    }

    var method: Method { .deleteCookies }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { DeleteCookiesResult(json: result).map { "deleted \($0.deleted)\n" } }
}

struct CookieListCommand: SingleCallCommand {
    static let words = ["cookie", "list"]
    static let synopsis = "[--domain D]"
    static let abstract = "List the cookies of the jar, or of one domain and its subdomains."

    let request: ListCookiesParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(arguments, spec: OptionSpec(valued: ["--domain"]))
        _ = try parsed.positionals()
        request = ListCookiesParams(domain: parsed.values["--domain"])
    }

    var method: Method { .listCookies }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? {
        ListCookiesResult(json: result).map { HumanFormat.cookieTable($0.cookies) }
    }
}

struct CookieImportCommand: Subcommand {
    static let words = ["cookie", "import"]
    static let synopsis = "FILE"
    static let abstract = "Import a Netscape cookies.txt file (- reads standard input)."

    let file: String

    init(_ arguments: [String]) throws(UsageError) {
        file = try ParsedArguments(arguments, spec: OptionSpec()).positionals("FILE")[0]
    }

    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String {
        let data: String
        do { data = try LocalFile.read(file) } catch { throw .file(error.description, exitCode: ExitStatus.noInput) }
        guard Self.isCookiesTxt(data) else {
            let name = file == "-" ? "standard input" : file
            throw .file(
                "\(name): not a cookies.txt file: no line has a cookie's 7 TAB-separated fields"
                    + " (domain, subdomains, path, secure, expiry, name, value)",
                exitCode: ExitStatus.dataError)
        }
        let result: JSON
        do {
            result = try connection.call(Method.importCookies.rawValue, params: ImportCookiesParams(data: data).json)
        } catch { throw .client(error) }
        if json { return result.encodedString + "\n" }
        guard let imported = ImportCookiesResult(json: result) else {
            throw .client(.malformedResponse("the importCookies result does not match the contract"))
        }
        return "imported \(imported.imported)\n"
    }

    /// Whether `text` is a Netscape cookies.txt file: a line has the shape of a cookie (the daemon decides
    /// which of those it stores), or the first line is the header curl, wget and Python write, as in an
    /// exported empty jar. Anything else (an HTML page, a JSON file, an empty file) would import nothing.
    static func isCookiesTxt(_ text: String) -> Bool {
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        if let first = lines.first, first.first == UInt8(ascii: "#"),
            String(decoding: first, as: UTF8.self).lowercased().contains("http cookie file")
        {
            return true
        }
        let httpOnly = Array("#HttpOnly_".utf8)
        return lines.contains { line in
            let cookie = line.starts(with: httpOnly) ? line.dropFirst(httpOnly.count) : line
            return cookie.first != UInt8(ascii: "#") && cookie.count(where: { $0 == 0x09 }) >= 6
        }
    }
}

struct CookieExportCommand: Subcommand {
    static let words = ["cookie", "export"]
    static let synopsis = "[FILE]"
    static let abstract = "Write the jar as a Netscape cookies.txt file (standard output when FILE is absent or -)."

    let file: String?

    init(_ arguments: [String]) throws(UsageError) {
        let given = try ParsedArguments(arguments, spec: OptionSpec()).optionalPositional()
        file = given == "-" ? nil : given
    }

    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String {
        let result: JSON
        do {
            result = try connection.call(Method.exportCookies.rawValue, params: ExportCookiesParams().json)
        } catch { throw .client(error) }
        guard let data = ExportCookiesResult(json: result)?.data else {
            throw .client(.malformedResponse("the exportCookies result does not match the contract"))
        }
        if let file {
            do { try LocalFile.write(data, to: file) } catch {
                throw .file(error.description, exitCode: ExitStatus.cannotCreate)
            }
        }
        if json { return result.encodedString + "\n" }
        return file == nil ? data : ""
    }
}

// MARK: daemon

struct StatusCommand: SingleCallCommand {
    static let words = ["status"]
    static let synopsis = ""
    static let abstract = "Show the daemon's version, uptime, cache, cookie count and upstream health."

    init(_ arguments: [String]) throws(UsageError) {
        _ = try ParsedArguments(arguments, spec: OptionSpec()).positionals()
    }

    var method: Method { .status }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? { StatusResult(json: result).map(HumanFormat.status) }
}

struct FlushCommand: SingleCallCommand {
    static let words = ["flush"]
    static let synopsis = "[HOST]"
    static let abstract = "Drop cached answers for HOST, or all of them."

    let request: FlushCacheParams

    init(_ arguments: [String]) throws(UsageError) {
        request = FlushCacheParams(host: try ParsedArguments(arguments, spec: OptionSpec()).optionalPositional())
    }

    var method: Method { .flushCache }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { FlushCacheResult(json: result).map { "flushed \($0.flushed)\n" } }
}

struct CallCommand: Subcommand {
    static let words = ["call"]
    static let synopsis = "METHOD [JSON]"
    static let abstract = "Call any method with a raw params object; print the result JSON."

    let method: String
    let params: JSONObject

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try ParsedArguments(arguments, spec: OptionSpec())
        guard let method = parsed.positionals.first else { throw UsageError("missing METHOD") }
        if parsed.positionals.count > 2 { throw UsageError("unexpected argument \(parsed.positionals[2])") }
        self.method = method
        guard parsed.positionals.count == 2 else {
            params = JSONObject()
            return
        }
        let text = parsed.positionals[1]
        let json: JSON
        do { json = try JSONParser.parse(text) } catch {
            throw UsageError("params are not valid JSON: \(error.description)")
        }
        guard let object = json.objectValue else {
            throw UsageError("params must be a JSON object, not \(json.typeName)")
        }
        params = object
    }

    func run(_ connection: HTTPDNSConnection, json: Bool) throws(CommandFailure) -> String {
        do { return try connection.call(method, params: params).encodedString + "\n" } catch { throw .client(error) }
    }
}
