import HTTPDNSClient
import HTTPDNSProtocol

/// Exit statuses, from sysexits.h where one fits; `--help` lists them.
enum ExitStatus {
    static let success: Int32 = 0
    /// The daemon answered with a JSON-RPC error.
    static let daemonError: Int32 = 1
    /// EX_USAGE: unknown subcommand or option, missing argument, bad JSON for `call`.
    static let usage: Int32 = 64
    /// EX_DATAERR: the file to import is not a cookies.txt file (no line is a cookie).
    static let dataError: Int32 = 65
    /// EX_NOINPUT: the file to import cannot be read.
    static let noInput: Int32 = 66
    /// EX_NOHOST: `httpdnsctl curl` on an IP-address URL that the caller's resolves gave several host
    /// names, with no Host header to say which: curl not run. (curl's own 68 is a TFTP error, which an
    /// http or https URL cannot give.)
    static let ambiguousAddress: Int32 = 68
    /// EX_UNAVAILABLE: no daemon at the socket, or it did not answer.
    static let unavailable: Int32 = 69
    /// EX_SOFTWARE: the daemon's reply is not what the contract says.
    static let software: Int32 = 70
    /// EX_OSERR: `browser open` could not start the browser, `browser attach` could not reach it
    /// or found it another user's, or the browser was lost other than by its exit.
    static let browserFailed: Int32 = 71
    /// EX_CANTCREAT: the export file cannot be written.
    static let cannotCreate: Int32 = 73
}

/// What one run printed and how it ended; `main.swift` writes it out, tests read it.
struct CLIOutcome: Equatable {
    var standardOutput = ""
    var standardError = ""
    var status: Int32 = ExitStatus.success
    /// The signal that ended curl (`httpdnsctl curl`): main ends this process with it too.
    var signal: Int32?
}

/// httpdnsctl: global options, subcommand dispatch, and the mapping of failures to exit statuses.
enum CLI {
    static var subcommands: [any Subcommand.Type] {
        [
            ResolveCommand.self, ReverseCommand.self, ForgetCommand.self, CookieGetCommand.self, CookieSetCommand.self,
            CookieDeleteCommand.self,
            CookieListCommand.self, CookieImportCommand.self, CookieExportCommand.self, StatusCommand.self,
            FlushCommand.self, ShowCacheCommand.self, StatisticsCommand.self, ResetStatisticsCommand.self,
            MetricsCommand.self, MonitorCommand.self, BrowserOpenCommand.self, BrowserAttachCommand.self,
            CallCommand.self, HelpCommand.self,
            CompletionCommand.self,
        ]
    }

    /// The global options, for help, did-you-mean and completion (`curl` is its own command line).
    static let globalOptions: [OptionDoc] = [
        .valued("--socket", "PATH", "the daemon's socket"),
        .valued("--json", "STYLE", choices: ["short", "pretty", "off"], "print results (and errors) as JSON"),
        .flag("--help", "print help (of a command, after it)"),
        .flag("--version", "print the version"),
    ]

    /// The options every subcommand accepts, anywhere before `--`.
    struct GlobalOptions: Equatable {
        var socketPath: String?
        /// nil: human output.
        var json: JSONStyle?
        var help = false
        var version = false
    }

    static func run(_ arguments: [String]) -> CLIOutcome {
        if let (socketPath, curlArguments) = curlInvocation(arguments) {
            do {
                return try CurlCommand(curlArguments).run(socket: DaemonSocketPath.locate(explicit: socketPath))
            } catch {
                return usageFailure(error)
            }
        }
        let globals: GlobalOptions
        let rest: [String]
        do { (globals, rest) = try extractGlobals(arguments) } catch { return usageFailure(error) }
        if globals.help {
            // `COMMAND --help`: that command's help; alone, the overview.
            do { return CLIOutcome(standardOutput: try HelpCommand.text(for: rest)) } catch {
                return usageFailure(error)
            }
        }
        if globals.version { return CLIOutcome(standardOutput: "httpdnsctl \(ClientVersion.string)\n") }
        guard !rest.isEmpty else { return usageFailure(UsageError("missing a subcommand")) }
        let command: any Subcommand
        do { command = try parseSubcommand(rest) } catch { return usageFailure(error) }
        let socket = DaemonSocketPath.locate(explicit: globals.socketPath)
        let connection = HTTPDNSConnection(socketPath: socket.path)
        do {
            return CLIOutcome(standardOutput: try command.run(connection, json: globals.json))
        } catch {
            return failure(error, json: globals.json, socketOrigin: socket.origin)
        }
    }

    /// Takes the global options out of the arguments, leaving the subcommand and its own arguments.
    static func extractGlobals(_ arguments: [String]) throws(UsageError) -> (GlobalOptions, [String]) {
        var globals = GlobalOptions()
        var rest: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--":
                rest.append(contentsOf: arguments[(index - 1)...])
                return (globals, rest)
            case "--json": globals.json = .short
            case "--help", "-h": globals.help = true
            case "--version": globals.version = true
            case "--socket":
                guard index < arguments.count else { throw UsageError("option --socket needs a value") }
                globals.socketPath = arguments[index]
                index += 1
            default:
                if argument.hasPrefix("--socket=") {
                    globals.socketPath = String(argument.dropFirst("--socket=".count))
                } else if argument.hasPrefix("--json=") {
                    let word = String(argument.dropFirst("--json=".count))
                    guard let style = JSONStyle.parse(word) else {
                        throw UsageError(
                            "--json takes short, pretty or off, not \(word)"
                                + Suggest.didYouMean(word, among: ["short", "pretty", "off"]))
                    }
                    globals.json = style
                } else {
                    rest.append(argument)
                }
            }
            if globals.socketPath == "" { throw UsageError("option --socket needs a non-empty path") }
        }
        return (globals, rest)
    }

    /// `httpdnsctl [--socket PATH] [--json] curl ARGS...`: the socket and curl's arguments, which
    /// are curl's own (its `-h` or `--json` are not httpdnsctl's), so only options before the
    /// word `curl` are httpdnsctl's. nil for any other subcommand.
    static func curlInvocation(_ arguments: [String]) -> (socketPath: String?, arguments: [String])? {
        var socketPath: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "curl": return (socketPath, Array(arguments[(index + 1)...]))
            case "--json": index += 1
            case let option where option.hasPrefix("--json="): index += 1
            case "--socket" where index + 1 < arguments.count:
                socketPath = arguments[index + 1]
                index += 2
            default:
                guard argument.hasPrefix("--socket=") else { return nil }
                socketPath = String(argument.dropFirst("--socket=".count))
                index += 1
            }
        }
        return nil
    }

    /// The subcommand whose words start `arguments` (nil when none does).
    static func subcommand(for arguments: [String]) -> (any Subcommand.Type)? {
        subcommands.first { arguments.starts(with: $0.words) }
    }

    /// Picks the subcommand whose words start `arguments` and parses the remainder with it.
    static func parseSubcommand(_ arguments: [String]) throws(UsageError) -> any Subcommand {
        if let type = subcommand(for: arguments) {
            return try type.init(Array(arguments.dropFirst(type.words.count)))
        }
        if arguments[0] == "cookie" || arguments[0] == "browser" {
            let group = arguments[0]
            let names = subcommands.filter { $0.words.count == 2 && $0.words[0] == group }.map { $0.words[1] }
            guard arguments.count > 1 else {
                throw UsageError("missing a \(group) subcommand (\(names.joined(separator: ", ")))")
            }
            throw UsageError(
                "unknown \(group) subcommand \(arguments[1])" + Suggest.didYouMean(arguments[1], among: names))
        }
        if arguments[0].hasPrefix("-") {
            let names = globalOptions.map(\.name) + ["-h"]
            throw UsageError("unknown option \(arguments[0])" + Suggest.didYouMean(arguments[0], among: names))
        }
        let names = Set(subcommands.map { $0.words[0] } + ["curl"])
        throw UsageError("unknown subcommand \(arguments[0])" + Suggest.didYouMean(arguments[0], among: Array(names)))
    }

    /// `get`, `set`, ...: the words after `cookie`.
    static var cookieSubcommands: [String] {
        subcommands.filter { $0.words.count == 2 && $0.words[0] == "cookie" }.map { $0.words[1] }
    }

    static func usageFailure(_ error: UsageError) -> CLIOutcome {
        CLIOutcome(
            standardError: "httpdnsctl: \(error.message)\nTry 'httpdnsctl --help'.\n", status: ExitStatus.usage)
    }

    /// Exhaustive on purpose: a new kind of client failure must pick its exit status here. With
    /// `--json`, a daemon's error is printed as its JSON-RPC error object (`data` and all) on
    /// standard output, with the same exit status. An unreachable daemon's message names the socket
    /// and where its path came from (`socketOrigin`).
    static func failure(
        _ error: CommandFailure, json: JSONStyle? = nil, socketOrigin: DaemonSocketPath.Origin
    ) -> CLIOutcome {
        switch error {
        case .file(let message, let status):
            return CLIOutcome(standardError: "httpdnsctl: \(message)\n", status: status)
        case .partial(let output, let errors):
            let lines = errors.map { "httpdnsctl: \($0)\n" }.joined()
            return CLIOutcome(standardOutput: output, standardError: lines, status: ExitStatus.daemonError)
        case .client(let clientError):
            if let unreachable = UnreachableDaemon(clientError, origin: socketOrigin) {
                return CLIOutcome(standardError: unreachable.message(), status: ExitStatus.unavailable)
            }
            let status: Int32
            switch clientError {
            case .rpc(let rpcError):
                if let json {
                    return CLIOutcome(standardOutput: json.render(rpcError.json), status: ExitStatus.daemonError)
                }
                status = ExitStatus.daemonError
            case .unreachable, .timeout, .connectionClosed: status = ExitStatus.unavailable
            case .malformedResponse: status = ExitStatus.software
            }
            return CLIOutcome(standardError: "httpdnsctl: \(clientError.description)\n", status: status)
        }
    }

    static var usage: String {
        var text = """
            Usage: httpdnsctl [--socket PATH] [--json[=short|pretty]] COMMAND [ARGS...]

            Talks to httpdnsd, the HTTPDNS cache and cookie jar daemon.

            Commands:

            """
        for type in subcommands { text += "  \(type.usageLine)\n      \(type.abstract)\n" }
        text += "  curl \(CurlCommand.synopsis)\n      \(CurlCommand.abstract)\n"
        text += """

            Options:
              --socket PATH  the daemon's socket (default: $HTTPDNSD_SOCKET, else
                             $XDG_RUNTIME_DIR/httpdnsd/httpdnsd.sock if it exists,
                             else \(DaemonSocketPath.system))
              --json[=STYLE] print the raw result JSON (short: one line, the default;
                             pretty: indented); a daemon's error too, as its error object
              -h, --help     print this help; after a command, that command's help
              --version      print the version

            Exit status:
              0   success
              1   the daemon answered with an error
              64  usage error (unknown command or option, missing argument, empty name, bad JSON)
              65  the file to import is not a cookies.txt file (no cookie line)
              66  the file to import cannot be read
              68  curl: the URL's IP address is several hosts' and no Host header says which
              69  the daemon is not reachable (or did not answer in time)
              70  the daemon's reply is malformed
              71  browser: the browser could not be started or reached, stopped answering,
                  or (attach) its debugging socket is another user's
              73  the export file cannot be written

            """
        return text
    }
}
