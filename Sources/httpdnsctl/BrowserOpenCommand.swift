import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// `browser open URL [-- CHROMIUM-ARGS...]`: Chromium on a fresh profile, joined to the caller's
/// session (`BrowserSession`) and connecting IP-direct through `ResolvingProxy`, until it exits.
struct BrowserOpenCommand: Subcommand {
    static let words = ["browser", "open"]
    static let synopsis = "URL [-- CHROMIUM-ARGS...]"
    static let abstract = "Open URL in Chromium sharing your cookie jar live, connecting to the daemon's addresses."
    static let options: [OptionDoc] = [
        .valued("--browser", "PATH", "the Chromium executable (default \(defaultBrowser))"),
        .flag("--verbose", "say on standard error what is synced each way (names, never values)"),
    ]
    static let details = """
        Before the first request, every cookie of your jar is put into the browser (HttpOnly,
        Secure, SameSite and expiry kept). Every Set-Cookie the browser receives is stored in the
        daemon as it arrives; cookies set or deleted by scripts reach the daemon within about a
        second; cookies changed natively (httpdnsctl curl, libhttpdns) reach the browser as the
        daemon reports the change. The browser's proxy is httpdnsctl itself, which resolves every
        host name through the daemon. The browser ends when httpdnsctl does, and the other way round.
        Arguments after -- go to Chromium as they are.

        Examples:
          httpdnsctl browser open https://app.example.com/
          httpdnsctl browser open https://app.example.com/ -- --headless=new

        """
    static let positionalCompletion = PositionalCompletion.nothing

    static let defaultBrowser = "/usr/bin/chromium"

    let url: String
    let browser: String
    let verbose: Bool
    let browserArguments: [String]

    init(_ arguments: [String]) throws(UsageError) {
        let split = arguments.firstIndex(of: "--") ?? arguments.endIndex
        let parsed = try Self.parse(Array(arguments[..<split]))
        url = try parsed.positionals("URL")[0]
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
            throw UsageError("URL must be an http or https URL: \(url)")
        }
        browser = parsed.values["--browser"] ?? Self.defaultBrowser
        guard browser.hasPrefix("/") else { throw UsageError("--browser needs an absolute path") }
        verbose = parsed.flags.contains("--verbose")
        browserArguments = split < arguments.endIndex ? Array(arguments[(split + 1)...]) : []
    }

    /// What keeps a fresh profile from reaching out on its own (updates, sync, metrics, safe
    /// browsing) and from asking questions a first run asks.
    static let quietFlags = [
        "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
        "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--disable-breakpad",
        "--metrics-recording-only", "--no-service-autorun", "--password-store=basic",
        "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    ]

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        let log = SessionLog(verbose: verbose)
        let support = try BrowserSessionSupport(connection: connection, log: log)
        let profile: String
        do { profile = try Files.makeTemporaryDirectory(prefix: "httpdnsctl-browser") } catch {
            throw .file("browser: \(error.description)", exitCode: ExitStatus.browserFailed)
        }
        defer { Files.removeTree(profile) }

        let arguments =
            Self.quietFlags + [
                "--user-data-dir=\(profile)", "--remote-debugging-pipe",
                "--proxy-server=\(support.proxy.serverArgument)",
            ] + browserArguments + ["about:blank"]
        let child: TiedChild
        do {
            child = try TiedChild.spawn(browser, arguments, environment: ProcessEnvironment.all)
        } catch {
            throw .file("browser: cannot start \(browser): \(error.errno)", exitCode: ExitStatus.browserFailed)
        }
        defer { Self.stop(child) }
        log.debug("started \(browser) as pid \(child.pid), proxy \(support.proxy.serverArgument), profile \(profile)")
        let session = support.session(DevToolsPipe(input: child.input, output: child.output), context: nil)
        do {
            try session.open(url)
        } catch {
            // A browser that quit leaves its pipe closed a moment before it can be reaped.
            if case .file(let message, let status) = error, child.exits(within: 2_000) {
                throw .file("\(message) (\(browser) exited; its messages are above)", exitCode: status)
            }
            throw error
        }
        log.debug("opened \(LogText.origin(url))")
        switch try session.run() {
        case .browserExited: log.debug("the browser exited")
        case .signal(let number): log.debug("signal \(number): closing the browser")
        }
        return ""
    }

    /// SIGTERM to the browser's process group, SIGKILL when it is still there after 5 s.
    static func stop(_ child: TiedChild) {
        child.signalGroup(SIGTERM)
        _ = child.exits(within: 5_000)
        child.signalGroup(SIGKILL)
        _ = child.hasExited()
        child.input.close()
        child.output.close()
    }
}

/// What `browser open` and `browser attach` share: signals read in the poll loop, the daemon's
/// change stream, and the resolving proxy, all set up before the browser is reached.
struct BrowserSessionSupport {
    let connection: HTTPDNSConnection
    let log: SessionLog
    let signals: SignalDescriptor
    let watcher: JarChangeWatcher
    let proxy: ResolvingProxy

    init(connection: HTTPDNSConnection, log: SessionLog) throws(CommandFailure) {
        self.connection = connection
        self.log = log
        SignalSource.ignoreSIGPIPE()
        do {
            // Before any thread starts, so that all of them inherit the blocked mask.
            signals = try SignalDescriptor(signals: [SIGINT, SIGTERM, SIGHUP])
            watcher = try JarChangeWatcher(socketPath: connection.socketPath)
            proxy = try ResolvingProxy(socketPath: connection.socketPath) { log.warning($0) }
        } catch {
            throw .file("browser: \(error.description)", exitCode: ExitStatus.browserFailed)
        }
        do { try watcher.start() } catch { throw .client(error) }
        proxy.start()
    }

    func session(_ pipe: DevToolsPipe, context: String?) -> BrowserSession {
        BrowserSession(
            pipe: pipe, context: context, daemon: connection, watcher: watcher, signals: signals, log: log)
    }
}
