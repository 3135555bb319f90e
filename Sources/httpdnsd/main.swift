import Glibc
import HTTPDNSServer

/// `httpdnsd [--config PATH] [--socket PATH] [--state-dir DIR] [--version] [--help]`
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
          --version         print the version and exit
          -h, --help        print this help and exit

        """

    static func fail(_ message: String, status: Int32) -> Never {
        let line = "httpdnsd: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        // _exit: worker threads may still be inside libcurl, whose atexit teardown would pull the
        // library out from under them. Everything was written with write(2), unbuffered.
        _exit(status)
    }

    static func parse(_ arguments: [String]) -> DaemonOptions {
        var options = DaemonOptions()
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
        return options
    }

    static func main() {
        let options = parse(Array(CommandLine.arguments.dropFirst()))
        do {
            let daemon = try Daemon(options: options)
            let status = try daemon.run()
            // The state is on disk and the loop has stopped; skip atexit teardown (see fail).
            _exit(status)
        } catch let error as StartupError {
            fail(error.description, status: error.exitStatus)
        } catch {
            fail("\(error)", status: 1)
        }
    }
}

Main.main()
