import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// `browser attach ENDPOINT [URL]`: a browser already running with `--remote-debugging-port`
/// (yours, checked) gets a browser context of its own, joined to the caller's session and
/// connecting IP-direct through the resolving proxy (`Target.createBrowserContext{proxyServer}`).
struct BrowserAttachCommand: Subcommand {
    static let words = ["browser", "attach"]
    static let synopsis = "ENDPOINT [URL]"
    static let abstract = "Join a running Chromium of yours to your session, in a browser context of its own."
    static let options: [OptionDoc] = [
        .flag("--verbose", "say on standard error what is synced each way (names, never values)")
    ]
    static let details = """
        ENDPOINT is the browser's ws://127.0.0.1:PORT/devtools/browser/ID (its DevToolsActivePort
        file, or /json/version, names it). A browser whose debugging socket is another user's is
        refused: your cookies never go into it. The new context starts with your whole jar, opens
        URL (default about:blank), shares the session as browser open does, and is closed when
        httpdnsctl ends; the browser and its other pages are left alone.

        Example:
          httpdnsctl browser attach ws://127.0.0.1:9222/devtools/browser/1b2c https://app.example.com/

        """

    let endpoint: (port: UInt16, path: String)
    let url: String
    let verbose: Bool

    init(_ arguments: [String]) throws(UsageError) {
        let parsed = try Self.parse(arguments)
        guard let text = parsed.positionals.first else { throw UsageError("missing ENDPOINT") }
        if parsed.positionals.count > 2 { throw UsageError("unexpected argument \(parsed.positionals[2])") }
        guard let endpoint = WebSocketTransport.endpoint(text) else {
            throw UsageError("ENDPOINT must be ws://127.0.0.1:PORT/..., not \(text)")
        }
        self.endpoint = endpoint
        url = parsed.positionals.count > 1 ? parsed.positionals[1] : "about:blank"
        let lowered = url.lowercased()
        guard lowered == "about:blank" || lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw UsageError("URL must be an http or https URL: \(url)")
        }
        verbose = parsed.flags.contains("--verbose")
    }

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        let log = SessionLog(verbose: verbose)
        let pipe: DevToolsPipe
        do { pipe = DevToolsPipe(try WebSocketTransport(port: endpoint.port, path: endpoint.path)) } catch {
            throw .file("browser: \(error.message)", exitCode: ExitStatus.browserFailed)
        }
        let support = try BrowserSessionSupport(connection: connection, log: log)
        let context: String
        do throws(BrowserFailure) {
            let created = try pipe.call(
                "Target.createBrowserContext",
                ["proxyServer": .string(support.proxy.serverArgument), "disposeOnDetach": true])
            guard let id = created["browserContextId"]?.stringValue else {
                throw BrowserFailure("Target.createBrowserContext gave no browserContextId")
            }
            context = id
        } catch {
            throw .file("browser: \(error.message)", exitCode: ExitStatus.browserFailed)
        }
        log.debug("attached to 127.0.0.1:\(endpoint.port), context \(context), proxy \(support.proxy.serverArgument)")
        defer { _ = try? pipe.call("Target.disposeBrowserContext", ["browserContextId": .string(context)]) }
        let session = support.session(pipe, context: context)
        try session.open(url)
        log.debug("opened \(LogText.origin(url))")
        switch try session.run() {
        case .browserExited: log.debug("the browser went away")
        case .signal(let number): log.debug("signal \(number): closing the context")
        }
        return ""
    }
}
