import HTTPDNSClient
import HTTPDNSProtocol

/// Why a subcommand failed after its arguments were accepted.
enum CommandFailure: Error {
    case client(ClientError)
    /// A local file could not be read or written; `exitCode` is 66 (EX_NOINPUT) or 73 (EX_CANTCREAT).
    case file(String, exitCode: Int32)
    /// Some of several requests failed at the daemon (`resolve A B`): what succeeded is still
    /// printed, each failure gets a line on standard error, and the status is 1.
    case partial(output: String, errors: [String])
}

/// One subcommand of httpdnsctl: how it reads its arguments and what it prints.
protocol Subcommand {
    /// The words that select it (`["cookie", "get"]`).
    static var words: [String] { get }
    /// Its positional arguments after the words, for the usage text (options come from `options`).
    static var synopsis: String { get }
    /// One line saying what it does.
    static var abstract: String { get }
    /// Its options, for parsing, `help`, did-you-mean and shell completion.
    static var options: [OptionDoc] { get }
    /// What `help` adds after the options: notes and examples that work as written.
    static var details: String { get }
    /// What shell completion offers for its positional arguments.
    static var positionalCompletion: PositionalCompletion { get }

    init(_ arguments: [String]) throws(UsageError)

    /// Runs against the daemon and returns what goes to standard output (`json`: the raw result
    /// in that style; nil: the human form).
    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String
}

/// What completion offers where a command takes positional arguments.
enum PositionalCompletion: Equatable {
    case nothing
    case files
    /// Host names the shell knows (/etc/hosts).
    case hosts
    case words([String])
}

extension Subcommand {
    static var options: [OptionDoc] { [] }
    static var details: String { "" }
    static var positionalCompletion: PositionalCompletion { .nothing }

    /// `resolve NAME... [-4] [-6] [--family F] ...`: the words, the positionals and every option.
    static var usageLine: String {
        ([words.joined(separator: " ")] + (synopsis.isEmpty ? [] : [synopsis]) + options.map { "[\($0.usage)]" })
            .joined(separator: " ")
    }

    /// `httpdnsctl help COMMAND` and `COMMAND --help`.
    static var help: String {
        var text = "Usage: httpdnsctl [--socket PATH] [--json[=short|pretty]] \(usageLine)\n\n\(abstract)\n"
        if !options.isEmpty {
            text += "\nOptions:\n"
            let width = min(24, (options.map(\.usage.count).max() ?? 0) + 2)
            for option in options {
                let usage = option.usage
                let padding = String(repeating: " ", count: max(1, width - usage.count))
                text += "  \(usage)\(padding)\(option.help)\n"
            }
        }
        if !details.isEmpty { text += "\n" + details }
        return text
    }

    /// The parsed arguments against this command's own options.
    static func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        try ParsedArguments(arguments, spec: OptionSpec(options))
    }
}

/// A subcommand that is one call whose result is shown as JSON or, by default, as text.
protocol SingleCallCommand: Subcommand {
    var method: Method { get }
    var params: JSONObject { get }
    /// The human form of `result`; nil when the result does not match the contract.
    func human(_ result: JSON) -> String?
}

extension SingleCallCommand {
    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        let result: JSON
        do { result = try connection.call(method.rawValue, params: params) } catch { throw .client(error) }
        if let json { return json.render(result) }
        guard let text = human(result) else {
            throw .client(.malformedResponse("the \(method.rawValue) result does not match the contract"))
        }
        return text
    }
}

/// `value`, refused when it is empty (`resolve ''`): the daemon would only answer
/// `: Invalid params`. `field` is the member of the call's params, as the daemon names it.
@discardableResult
func nonEmpty(_ value: String?, _ field: String) throws(UsageError) -> String? {
    if value?.isEmpty == true { throw UsageError("\(field): must not be empty") }
    return value
}

@discardableResult
func nonEmpty(_ value: String, _ field: String) throws(UsageError) -> String {
    if value.isEmpty { throw UsageError("\(field): must not be empty") }
    return value
}

// MARK: resolve

struct ResolveCommand: Subcommand {
    static let words = ["resolve"]
    static let synopsis = "NAME..."
    static let abstract = "Resolve each NAME through the daemon's cache and upstreams, one line per address."
    static let positionalCompletion = PositionalCompletion.hosts
    static let options: [OptionDoc] = [
        .flag("-4", "IPv4 addresses only (--family ipv4)"),
        .flag("-6", "IPv6 addresses only (--family ipv6)"),
        .valued("--family", "F", choices: ["ipv4", "ipv6", "both"], "ipv4, ipv6 or both (the default)"),
        .flag("--no-stale", "never answer with an expired cached answer"),
        .valued("--timeout", "MS", "wait at most MS milliseconds for an upstream (default: Timeout=)"),
    ]
    static let details = """
        Each name is resolved on its own: a name that fails is reported on standard error and the
        others are still printed; the exit status is 1 if any name failed. With --json the output
        is an array with one element per name: its result, or {"host": NAME, "error": {...}}.

        Examples:
          httpdnsctl resolve localhost
          httpdnsctl resolve -4 localhost app.example.test
          httpdnsctl --json=pretty resolve localhost

        """

    let requests: [ResolveParams]

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        guard !parsed.positionals.isEmpty else { throw UsageError("missing NAME") }
        var family = AddressFamily.both
        if let raw = parsed.values["--family"] {
            guard let value = AddressFamily(rawValue: raw) else {
                throw UsageError("--family must be ipv4, ipv6 or both, not \(raw)")
            }
            family = value
        }
        let only4 = parsed.flags.contains("-4")
        let only6 = parsed.flags.contains("-6")
        if only4 || only6 {
            guard parsed.values["--family"] == nil, !(only4 && only6) else {
                throw UsageError("give one of -4, -6 or --family")
            }
            family = only4 ? .ipv4 : .ipv6
        }
        var timeout: Int?
        if let raw = parsed.values["--timeout"] {
            guard let ms = Int64(raw), (1...ResolveParams.maxTimeoutMs).contains(ms) else {
                throw UsageError(
                    "--timeout must be milliseconds between 1 and \(ResolveParams.maxTimeoutMs), not \(raw)")
            }
            timeout = Int(ms)
        }
        let allowStale = !parsed.flags.contains("--no-stale")
        for name in parsed.positionals { try nonEmpty(name, "host") }
        requests = parsed.positionals.map {
            ResolveParams(host: $0, family: family, allowStale: allowStale, timeoutMs: timeout)
        }
    }

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        // Every name in one pipelined exchange; the reply deadline stretches past --timeout so the
        // daemon's own timeout, not the client's, decides a slow lookup.
        let deadline = requests[0].timeoutMs.map { max(connection.defaultTimeoutMilliseconds, $0 + 5_000) }
        let outcomes: [Result<JSON, RPCError>]
        do {
            outcomes = try connection.pipeline(
                requests.map { (Method.resolve.rawValue, $0.json) }, timeoutMilliseconds: deadline)
        } catch { throw .client(error) }
        var failures: [(host: String, error: RPCError)] = []
        var output = ""
        var elements: [JSON] = []
        for (request, outcome) in zip(requests, outcomes) {
            switch outcome {
            case .success(let result):
                guard let typed = ResolveResult(json: result) else {
                    throw .client(.malformedResponse("the resolve result does not match the contract"))
                }
                elements.append(result)
                output += HumanFormat.resolve(typed)
            case .failure(let error):
                failures.append((request.host, error))
                elements.append(.object(["host": .string(request.host), "error": error.json]))
            }
        }
        if let json { output = json.render(.array(elements)) }
        guard failures.isEmpty else {
            // The human form names each failed name on standard error; JSON holds them already.
            let messages = failures.map { "\($0.host): \(ClientError.rpc($0.error).description)" }
            throw .partial(output: output, errors: json == nil ? messages : [])
        }
        return output
    }
}

struct ReverseCommand: SingleCallCommand {
    static let words = ["reverse"]
    static let synopsis = "ADDRESS"
    static let abstract = "Print the host names the daemon handed ADDRESS out for, to this user."
    static let details = """
        Only this user's own resolves count: another user's lookups never show here.

        Example:
          httpdnsctl reverse 127.0.0.1

        """

    let request: ReverseParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        request = ReverseParams(address: try nonEmpty(try parsed.positionals("ADDRESS")[0], "address"))
    }

    var method: Method { .reverse }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { ReverseResult(json: result).map(HumanFormat.reverse) }
}

struct ForgetCommand: SingleCallCommand {
    static let words = ["forget"]
    static let synopsis = "[ADDRESS]"
    static let abstract = "Make the daemon forget this user's memory of ADDRESS (or all of it)."
    static let options: [OptionDoc] = [.flag("--all", "forget every address this user's memory holds")]
    static let details = """
        The memory is what reverse prints and what files an IP URL's cookies under a host name.
        Only this user's memory changes: other users', the DNS cache and the cookie jar stay.

        Example:
          httpdnsctl forget 203.0.113.10

        """

    let request: ForgetParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        let address = try parsed.optionalPositional()
        switch (address, parsed.flags.contains("--all")) {
        case (let address?, false): request = ForgetParams(target: .address(try nonEmpty(address, "address")))
        case (nil, true): request = ForgetParams(target: .all)
        case (nil, false): throw UsageError("forget needs an ADDRESS or --all")
        case (_?, true): throw UsageError("forget takes an ADDRESS or --all, not both")
        }
    }

    var method: Method { .forget }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { ForgetResult(json: result).map { "forgot \($0.forgotten)\n" } }
}

// MARK: cookies

struct CookieGetCommand: SingleCallCommand {
    static let words = ["cookie", "get"]
    static let synopsis = "URL"
    static let abstract = "Print the Cookie header value the jar holds for a request to URL."
    static let options: [OptionDoc] = [
        .valued("--host", "H", "the host name an IP-literal URL stands for"),
        .flag("--for-script", "a script's request (document.cookie): no HttpOnly cookies"),
        .valued("--site", "URL", "the site for cookies (a cross-site request leaves SameSite cookies out)"),
        .flag("--top-level", "a top-level navigation (SameSite=Lax cookies go cross-site)"),
    ]
    static let details = """
        Example:
          httpdnsctl cookie get https://127.0.0.1/app --host app.example.test

        """

    let request: GetCookieHeaderParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        request = GetCookieHeaderParams(
            url: try nonEmpty(try parsed.positionals("URL")[0], "url"),
            host: try nonEmpty(parsed.values["--host"], "host"),
            forScript: parsed.flags.contains("--for-script"),
            siteForCookies: try nonEmpty(parsed.values["--site"], "siteForCookies"),
            topLevelNavigation: parsed.flags.contains("--top-level"))
    }

    var method: Method { .getCookieHeader }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { CookieHeaderResult(json: result).map { $0.header + "\n" } }
}

struct CookieSetCommand: SingleCallCommand {
    static let words = ["cookie", "set"]
    static let synopsis = "URL 'SET-COOKIE VALUE'..."
    static let abstract = "Store Set-Cookie header values received from URL."
    static let options: [OptionDoc] = [.valued("--host", "H", "the host name an IP-literal URL stands for")]
    static let details = """
        Example:
          httpdnsctl cookie set https://127.0.0.1/login --host app.example.test 'sid=abc; Path=/; HttpOnly'

        """

    let request: HandleSetCookieParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        guard let url = parsed.positionals.first else { throw UsageError("missing URL") }
        let values = Array(parsed.positionals.dropFirst())
        guard !values.isEmpty else { throw UsageError("missing a Set-Cookie value") }
        request = HandleSetCookieParams(
            url: try nonEmpty(url, "url"), host: try nonEmpty(parsed.values["--host"], "host"), setCookie: values)
    }

    var method: Method { .handleSetCookie }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { SetCookieResult(json: result).map(HumanFormat.setCookie) }
}

struct CookieDeleteCommand: SingleCallCommand {
    static let words = ["cookie", "delete"]
    static let synopsis = ""
    static let abstract = "Delete the cookies for a URL, of a domain and its subdomains, or all."
    static let options: [OptionDoc] = [
        .valued("--url", "URL", "the cookies a request to URL would send"),
        .valued("--host", "H", "with --url: the host name an IP-literal URL stands for"),
        .valued("--domain", "D", "every cookie of domain D and its subdomains"),
        .flag("--all", "every cookie of this user"),
        .valued("--name", "N", "only cookies named N"),
    ]
    static let details = """
        Give exactly one of --url, --domain or --all.

        Example:
          httpdnsctl cookie delete --domain example.test --name sid

        """

    let request: DeleteCookiesParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        _ = try parsed.positionals()
        let url = try nonEmpty(parsed.values["--url"], "url")
        let domain = try nonEmpty(parsed.values["--domain"], "domain")
        try nonEmpty(parsed.values["--host"], "host")
        try nonEmpty(parsed.values["--name"], "name")
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
    static let synopsis = ""
    static let abstract = "List the cookies of the jar, or of one domain and its subdomains."
    static let options: [OptionDoc] = [.valued("--domain", "D", "only domain D and its subdomains")]
    static let details = """
        Values longer than 40 characters are cut in the table; --json shows them whole.

        Example:
          httpdnsctl cookie list --domain example.test

        """

    let request: ListCookiesParams

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        _ = try parsed.positionals()
        request = ListCookiesParams(domain: try nonEmpty(parsed.values["--domain"], "domain"))
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
    static let positionalCompletion = PositionalCompletion.files
    static let options: [OptionDoc] = [CookieFileFormat.option]
    static let details = """
        Example:
          printf '.example.test\\tTRUE\\t/\\tFALSE\\t0\\tsid\\tabc\\n' > cookies.txt
          httpdnsctl cookie import cookies.txt

        """

    let file: String
    let format: CookieFileFormat

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        file = try nonEmpty(try parsed.positionals("FILE")[0], "file")
        format = try CookieFileFormat.named(parsed.values["--format"])
    }

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        let data: String
        do { data = try LocalFile.read(file) } catch { throw .file(error.description, exitCode: ExitStatus.noInput) }
        guard format == .storageState || Self.isCookiesTxt(data) else {
            let name = file == "-" ? "standard input" : file
            throw .file(
                "\(name): not a cookies.txt file: no line has a cookie's 7 TAB-separated fields"
                    + " (domain, subdomains, path, secure, expiry, name, value)",
                exitCode: ExitStatus.dataError)
        }
        let result: JSON
        do {
            result = try connection.call(
                Method.importCookies.rawValue, params: ImportCookiesParams(format: format, data: data).json)
        } catch { throw .client(error) }
        if let json { return json.render(result) }
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
    static let positionalCompletion = PositionalCompletion.files
    static let options: [OptionDoc] = [CookieFileFormat.option]
    static let details = """
        curl reads the file with -b FILE; so does wget. With --format storage-state the file is
        Playwright's storageState JSON: browser.new_context(storage_state=FILE) starts logged in.

        Example:
          httpdnsctl cookie export cookies.txt

        """

    let file: String?
    let format: CookieFileFormat

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        let given = try nonEmpty(try parsed.optionalPositional(), "file")
        file = given == "-" ? nil : given
        format = try CookieFileFormat.named(parsed.values["--format"])
    }

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        let result: JSON
        do {
            result = try connection.call(
                Method.exportCookies.rawValue, params: ExportCookiesParams(format: format).json)
        } catch { throw .client(error) }
        guard let data = ExportCookiesResult(json: result)?.data else {
            throw .client(.malformedResponse("the exportCookies result does not match the contract"))
        }
        if let file {
            do { try LocalFile.write(data, to: file) } catch {
                throw .file(error.description, exitCode: ExitStatus.cannotCreate)
            }
        }
        if let json { return json.render(result) }
        return file == nil ? data : ""
    }
}

// MARK: daemon

struct StatusCommand: SingleCallCommand {
    static let words = ["status"]
    static let synopsis = ""
    static let abstract = "Show the daemon's version, uptime, cache, cookie count and upstream health."
    static let details = """
        Example:
          httpdnsctl status

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    var method: Method { .status }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? { StatusResult(json: result).map(HumanFormat.status) }
}

struct FlushCommand: SingleCallCommand {
    static let words = ["flush"]
    static let synopsis = "[HOST]"
    static let abstract = "Drop cached answers for HOST, or all of them (root or the daemon's user only)."
    static let positionalCompletion = PositionalCompletion.hosts
    static let details = """
        The cache is shared by every user of the machine, so only root (and the daemon's own
        user) may flush it; anyone else gets error -32004 (exit status 1).

        Example:
          httpdnsctl flush app.example.test    # as root

        """

    let request: FlushCacheParams

    init(_ arguments: [String]) throws(UsageError) {
        request = FlushCacheParams(host: try nonEmpty(try Self.parse(arguments).optionalPositional(), "host"))
    }

    var method: Method { .flushCache }
    var params: JSONObject { request.json }
    func human(_ result: JSON) -> String? { FlushCacheResult(json: result).map { "flushed \($0.flushed)\n" } }
}

struct CallCommand: Subcommand {
    static let words = ["call"]
    static let synopsis = "METHOD [JSON]"
    static let abstract = "Call any method with a raw params object; print the result JSON."
    static let positionalCompletion = PositionalCompletion.words(Method.allCases.map(\.rawValue))
    static let details = """
        The methods and their params are in httpdnsd-rpc(7).

        Example:
          httpdnsctl call resolve '{"host":"localhost","family":"ipv4"}'

        """

    let method: String
    let params: JSONObject

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
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

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        do { return (json ?? .short).render(try connection.call(method, params: params)) } catch {
            throw .client(error)
        }
    }
}

extension CookieFileFormat {
    /// `cookie import` and `cookie export`'s `--format`.
    static let option = OptionDoc.valued(
        "--format", "F", "netscape (cookies.txt, the default) or storage-state (Playwright's storageState JSON)")

    static func named(_ value: String?) throws(UsageError) -> CookieFileFormat {
        guard let value else { return .netscape }
        guard let format = CookieFileFormat(rawValue: value) else {
            throw UsageError("--format: unknown format \(value) (netscape or storage-state)")
        }
        return format
    }
}
