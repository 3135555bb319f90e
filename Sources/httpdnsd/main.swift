import Glibc
import HTTPDNSCore
import HTTPDNSServer

/// `httpdnsd [--config PATH] [--socket PATH] [--state-dir DIR] [--log-level LEVEL]
/// [--check-config [FILE]] [--version] [--help]`
enum Main {
    static let usage = """
        Usage: httpdnsd [OPTIONS]

        A shared HTTPDNS cache and domain-normalized cookie jar, served as JSON-RPC 2.0 over a
        Unix socket (usually started by systemd through httpdnsd.socket).

        Options:
          --config PATH     configuration file (default /etc/httpdnsd/httpdnsd.conf when it exists)
          --socket PATH     socket to bind when systemd passed none
                            (default /run/httpdnsd/httpdnsd.sock as root,
                            $XDG_RUNTIME_DIR/httpdnsd/httpdnsd.sock otherwise)
          --state-dir DIR   where the cookie jars and the DNS cache are kept
                            (default $STATE_DIRECTORY, /var/lib/httpdnsd as root,
                            $XDG_STATE_HOME/httpdnsd otherwise)
          --log-level LEVEL error, warning, notice, info or debug (default LogLevel=, info)
          --check-config [FILE]
                            check the configuration (FILE, else --config's, else the
                            default) and exit: 0 when it can be used, 78 with every problem
          --version         print the version and exit
          -h, --help        print this help and exit

        """

    static func fail(_ message: String, status: Int32) -> Never {
        // One line per problem (a refused configuration lists every one), each prefixed.
        let lines = message.split(separator: "\n").map { "httpdnsd: \($0)\n" }.joined()
        _ = lines.withCString { write(2, $0, strlen($0)) }
        // _exit: worker threads may still be inside libcurl, whose atexit teardown would pull the
        // library out from under them. Everything was written with write(2), unbuffered.
        _exit(status)
    }

    /// What the command line asks for: run the daemon, or check a configuration and exit.
    enum Command {
        case run(DaemonOptions)
        case checkConfig(path: String?)
    }

    static func parse(_ arguments: [String]) -> Command {
        var options = DaemonOptions()
        var checking = false
        var checkPath: String?
        var index = 0
        func value(for flag: String) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].isEmpty else {
                fail("\(flag) needs a value (see --help)", status: 64)
            }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                flag = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            switch flag {
            case "--config": options.configPath = inline ?? value(for: flag)
            case "--socket": options.socketPath = inline ?? value(for: flag)
            case "--state-dir": options.stateDirectory = inline ?? value(for: flag)
            case "--log-level":
                let name = inline ?? value(for: flag)
                guard let level = LogPriority(name: name) else {
                    fail("unknown log level \"\(name)\" (error, warning, notice, info or debug)", status: 64)
                }
                options.logLevel = level
            case "--check-config":
                checking = true
                // The file is optional: the next argument is it unless it is another option.
                if let inline {
                    checkPath = inline
                } else if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") {
                    index += 1
                    checkPath = arguments[index]
                }
            case "--version":
                print("httpdnsd \(Daemon.version)")
                exit(0)
            case "-h", "--help":
                print(usage, terminator: "")
                exit(0)
            default:
                fail("unknown argument \"\(argument)\" (see --help)", status: 64)
            }
            index += 1
        }
        return checking ? .checkConfig(path: checkPath ?? options.configPath) : .run(options)
    }

    static func main() {
        switch parse(Array(CommandLine.arguments.dropFirst())) {
        case .checkConfig(let path):
            exit(ConfigurationLoader.check(explicitPath: path))
        case .run(let options):
            do {
                let daemon = try Daemon(options: options)
                let status = try daemon.run()
                // The state is on disk and the loop has stopped; skip atexit teardown (see fail).
                _exit(status)
            } catch let error as StartupError {
                fail(error.description, status: error.status)
            } catch {
                fail("\(error)", status: 1)
            }
        }
    }
}

Main.main()
