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
    /// EX_UNAVAILABLE: no daemon at the socket, or it did not answer.
    static let unavailable: Int32 = 69
    /// EX_SOFTWARE: the daemon's reply is not what the contract says.
    static let software: Int32 = 70
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
            ResolveCommand.self, ReverseCommand.self, CookieGetCommand.self, CookieSetCommand.self,
            CookieDeleteCommand.self,
            CookieListCommand.self, CookieImportCommand.self, CookieExportCommand.self, StatusCommand.self,
            FlushCommand.self, CallCommand.self,
        ]
    }

    /// The options every subcommand accepts, anywhere before `--`.
    struct GlobalOptions: Equatable {
        var socketPath: String?
        var json = false
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
        if globals.help { return CLIOutcome(standardOutput: usage) }
        if globals.version { return CLIOutcome(standardOutput: "httpdnsctl \(ClientVersion.string)\n") }
        guard !rest.isEmpty else { return usageFailure(UsageError("missing a subcommand")) }
        let command: any Subcommand
        do { command = try parseSubcommand(rest) } catch { return usageFailure(error) }
        let socket = DaemonSocketPath.locate(explicit: globals.socketPath)
        let connection = HTTPDNSConnection(socketPath: socket.path)
        do {
            return CLIOutcome(standardOutput: try command.run(connection, json: globals.json))
        } catch {
            return failure(error, socketOrigin: socket.origin)
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
            case "--json": globals.json = true
            case "--help", "-h": globals.help = true
            case "--version": globals.version = true
            case "--socket":
                guard index < arguments.count else { throw UsageError("option --socket needs a value") }
                globals.socketPath = arguments[index]
                index += 1
            default:
                if argument.hasPrefix("--socket=") {
                    globals.socketPath = String(argument.dropFirst("--socket=".count))
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

    /// Picks the subcommand whose words start `arguments` and parses the remainder with it.
    static func parseSubcommand(_ arguments: [String]) throws(UsageError) -> any Subcommand {
        for type in subcommands where arguments.starts(with: type.words) {
            return try type.init(Array(arguments.dropFirst(type.words.count)))
        }
        if arguments[0] == "cookie" {
            guard arguments.count > 1 else {
                throw UsageError("missing a cookie subcommand (get, set, delete, list, import, export)")
            }
            throw UsageError("unknown cookie subcommand \(arguments[1])")
        }
        if arguments[0].hasPrefix("-") { throw UsageError("unknown option \(arguments[0])") }
        throw UsageError("unknown subcommand \(arguments[0])")
    }

    static func usageFailure(_ error: UsageError) -> CLIOutcome {
        CLIOutcome(
            standardError: "httpdnsctl: \(error.message)\nTry 'httpdnsctl --help'.\n", status: ExitStatus.usage)
    }

    /// Exhaustive on purpose: a new kind of client failure must pick its exit status here.
    static func failure(_ error: CommandFailure, socketOrigin: DaemonSocketPath.Origin) -> CLIOutcome {
        switch error {
        case .file(let message, let status):
            return CLIOutcome(standardError: "httpdnsctl: \(message)\n", status: status)
        case .client(let clientError):
            if let unreachable = UnreachableDaemon(clientError, origin: socketOrigin) {
                return CLIOutcome(standardError: unreachable.message(), status: ExitStatus.unavailable)
            }
            let status: Int32
            switch clientError {
            case .rpc: status = ExitStatus.daemonError
            case .unreachable, .timeout, .connectionClosed: status = ExitStatus.unavailable
            case .malformedResponse: status = ExitStatus.software
            }
            return CLIOutcome(standardError: "httpdnsctl: \(clientError.description)\n", status: status)
        }
    }

    static var usage: String {
        var text = """
            Usage: httpdnsctl [--socket PATH] [--json] COMMAND [ARGS...]

            Talks to httpdnsd, the HTTPDNS cache and cookie jar daemon.

            Commands:

            """
        let synopses = subcommands.map { type in
            (type.words.joined(separator: " ") + (type.synopsis.isEmpty ? "" : " " + type.synopsis), type.abstract)
        }
        for (synopsis, abstract) in synopses { text += "  \(synopsis)\n      \(abstract)\n" }
        text += "  curl \(CurlCommand.synopsis)\n      \(CurlCommand.abstract)\n"
        text += """

            Options:
              --socket PATH  the daemon's socket (default: $HTTPDNSD_SOCKET, else
                             $XDG_RUNTIME_DIR/httpdnsd/httpdnsd.sock if it exists,
                             else \(DaemonSocketPath.system))
              --json         print the raw result JSON on one line
              -h, --help     print this help
              --version      print the version

            Exit status:
              0   success
              1   the daemon answered with an error
              64  usage error (unknown command or option, missing argument, bad JSON)
              65  the file to import is not a cookies.txt file (no cookie line)
              66  the file to import cannot be read
              69  the daemon is not reachable (or did not answer in time)
              70  the daemon's reply is malformed
              73  the export file cannot be written

            """
        return text
    }
}
