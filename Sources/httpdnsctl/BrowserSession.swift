import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// One browser joined to the caller's session: the jar goes into the browser before its first
/// navigation, and from then on every cookie change on either side reaches the other.
///
/// - Set-Cookie the browser receives, in any target (pages, frames, workers; all auto-attached
///   and paused until `Network.enable`), is stored through `handleSetCookie` for the URL it
///   came from, as it arrives.
/// - Script changes and deletions are found by comparing `Storage.getCookies` with what was
///   last agreed, every `browserPollMilliseconds`.
/// - Native changes arrive as change events (`JarChangeWatcher`), after which `listCookies` is
///   compared with what was last agreed and the difference applied to the browser.
final class BrowserSession {
    /// How often the browser's store is compared with the jar (script changes reach the daemon
    /// within about this long).
    static let browserPollMilliseconds: Int64 = 1_000
    /// The auto-attach every session gets, so that no target runs before it is watched.
    static let autoAttach: JSONObject = ["autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true]

    private let pipe: DevToolsPipe
    private let daemon: HTTPDNSConnection
    private let watcher: JarChangeWatcher
    private let signals: SignalDescriptor
    private let log: SessionLog
    /// The browser context this session lives in (`browser attach`); nil: the browser's default
    /// context, which is this session's alone (`browser open`).
    private let context: String?
    private var mirror = CookieMirror()
    private var tracker = SetCookieTracker()

    init(
        pipe: DevToolsPipe, context: String? = nil, daemon: HTTPDNSConnection, watcher: JarChangeWatcher,
        signals: SignalDescriptor, log: SessionLog
    ) {
        self.pipe = pipe
        self.context = context
        self.daemon = daemon
        self.watcher = watcher
        self.signals = signals
        self.log = log
    }

    /// Puts the whole jar into the browser, then opens `url` in a new page.
    func open(_ url: String) throws(CommandFailure) {
        do {
            _ = try pipe.call(
                "Target.setAutoAttach", Self.autoAttach, timeoutMilliseconds: DevToolsPipe.startTimeoutMilliseconds)
            try syncFromDaemon()
            var target: JSONObject = ["url": .string(url)]
            if let context { target.append("browserContextId", .string(context)) }
            _ = try pipe.call("Target.createTarget", target)
        } catch {
            throw Self.commandFailure(error)
        }
    }

    /// Why the session ended.
    enum End {
        case browserExited
        case signal(Int32)
    }

    /// Runs until the browser exits or a signal arrives.
    func run() throws(CommandFailure) -> End {
        do {
            return try loop()
        } catch {
            if pipe.closed { return .browserExited }
            throw Self.commandFailure(error)
        }
    }

    private static func commandFailure(_ error: any Error) -> CommandFailure {
        switch error {
        case let failure as BrowserFailure: .file("browser: \(failure.message)", exitCode: ExitStatus.browserFailed)
        case let error as ClientError: .client(error)
        default: .file("browser: \(error)", exitCode: ExitStatus.browserFailed)
        }
    }

    private func loop() throws -> End {
        var nextPoll = MonotonicClock.nowMilliseconds() + Self.browserPollMilliseconds
        while true {
            try handle(pipe.takeEvents())
            let timeout = max(0, nextPoll - MonotonicClock.nowMilliseconds())
            var entries = [
                pollfd(fd: pipe.readable.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: watcher.readable.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: signals.fd.rawValue, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 3, Int32(clamping: timeout))
            if ready < 0 && Errno.current != .interrupted {
                throw BrowserFailure("poll: \(Errno.current)")
            }
            if entries[2].revents != 0, let signal = signals.next() { return .signal(signal) }
            if entries[0].revents != 0 { try pipe.readAvailable() }
            if entries[1].revents != 0 {
                watcher.drain()
                try syncFromDaemon()
            }
            if MonotonicClock.nowMilliseconds() >= nextPoll {
                try syncFromBrowser()
                nextPoll = MonotonicClock.nowMilliseconds() + Self.browserPollMilliseconds
            }
        }
    }

    // MARK: events

    private func handle(_ events: [DevToolsEvent]) throws {
        for event in events {
            let request = event.params["requestId"]?.stringValue ?? ""
            switch event.method {
            case "Target.attachedToTarget":
                guard let session = event.params["sessionId"]?.stringValue else { continue }
                if let context, event.params["targetInfo"]?["browserContextId"]?.stringValue != context {
                    // Another context's target (the user's own pages of an attached browser): let it
                    // run, and leave it alone.
                    try pipe.send("Runtime.runIfWaitingForDebugger", session: session)
                    try pipe.send("Target.detachFromTarget", ["sessionId": .string(session)])
                    continue
                }
                // In this order, before the target runs: its first request is already seen.
                try pipe.send("Network.enable", session: session)
                try pipe.send("Target.setAutoAttach", Self.autoAttach, session: session)
                try pipe.send("Runtime.runIfWaitingForDebugger", session: session)
                log.debug("attached to a \(event.params["targetInfo"]?["type"]?.stringValue ?? "target")")
            case "Target.detachedFromTarget":
                if let session = event.params["sessionId"]?.stringValue { tracker.detached(session: session) }
            case "Network.requestWillBeSent":
                if let redirect = event.params["redirectResponse"], Self.cameFromNetwork(redirect),
                    let url = redirect["url"]?.stringValue
                {
                    try store(tracker.responseURL(url, session: event.sessionID, request: request))
                }
            case "Network.responseReceived":
                if let response = event.params["response"], Self.cameFromNetwork(response),
                    let url = response["url"]?.stringValue
                {
                    try store(tracker.responseURL(url, session: event.sessionID, request: request))
                }
            case "Network.responseReceivedExtraInfo":
                let headers = event.params["headers"]?.objectValue ?? JSONObject()
                try store(tracker.rawHeaders(headers, session: event.sessionID, request: request))
            case "Network.loadingFinished", "Network.loadingFailed":
                tracker.finished(session: event.sessionID, request: request)
            default:
                continue
            }
        }
    }

    /// Responses from the disk cache, a prefetch or a service worker get no ExtraInfo event.
    private static func cameFromNetwork(_ response: JSON) -> Bool {
        !["fromDiskCache", "fromPrefetchCache", "fromServiceWorker", "fromEarlyHints"].contains {
            response[$0]?.boolValue == true
        }
    }

    /// A response's Set-Cookie values, stored as the daemon would for a native request to its URL.
    private func store(_ received: SetCookieTracker.Received?) throws(ClientError) {
        guard let received, received.url.hasPrefix("http://") || received.url.hasPrefix("https://") else { return }
        let result: SetCookieResult
        do { result = try daemon.handleSetCookie(url: received.url, setCookie: received.setCookie) } catch {
            guard case .rpc(let refusal) = error else { throw error }
            // The code only: a message about a Set-Cookie may quote it, value and all.
            log.warning("Set-Cookie from \(LogText.origin(received.url)) not stored: error \(refusal.code.rawValue)")
            return
        }
        log.count(.handleSetCookie)
        log.debug(
            "stored \(result.stored) of \(received.setCookie.count) Set-Cookie from \(LogText.origin(received.url))")
    }

    // MARK: syncing

    /// Storage params for this session's browser context.
    private func inContext(_ params: JSONObject = JSONObject()) -> JSONObject {
        var params = params
        if let context { params.append("browserContextId", .string(context)) }
        return params
    }

    private func browserStore() throws(BrowserFailure) -> [BrowserCookie] {
        let result = try pipe.call("Storage.getCookies", inContext())
        return (result["cookies"]?.arrayValue ?? []).compactMap(BrowserCookie.init(devTools:))
    }

    /// The jar's changes since the last agreement, into the browser.
    private func syncFromDaemon() throws {
        let jar = try daemon.listCookies().filter { !$0.partitioned }.map(BrowserCookie.init)
        let changes = mirror.daemonChanged(jar)
        guard !changes.isEmpty else { return }
        if !changes.deleted.isEmpty {
            // Storage has no per-cookie delete (Network's needs a page session): an expired
            // cookie of the same name, domain and path replaces it, which removes it.
            log.count(.setCookies)
            _ = try pipe.call(
                "Storage.setCookies", inContext(["cookies": .array(changes.deleted.map(\.expiredCookieParam))]))
            for cookie in changes.deleted { log.debug("deleted \(LogText.cookie(cookie)) in the browser") }
        }
        if !changes.stored.isEmpty {
            try setInBrowser(changes.stored)
            mirror.browserTook(changes.stored, store: try browserStore())
        }
    }

    /// `Storage.setCookies` of all at once; when the browser refuses the batch (one bad cookie
    /// fails it), one by one, so the others still get in.
    private func setInBrowser(_ cookies: [BrowserCookie]) throws(BrowserFailure) {
        log.count(.setCookies)
        do {
            _ = try pipe.call("Storage.setCookies", inContext(["cookies": .array(cookies.map(\.cookieParam))]))
        } catch {
            guard !pipe.closed && cookies.count > 1 else { throw error }
            for cookie in cookies {
                log.count(.setCookies)
                _ = try? pipe.call("Storage.setCookies", inContext(["cookies": [cookie.cookieParam]]))
            }
        }
        log.debug("set \(cookies.count) cookie(s) in the browser")
    }

    /// The browser's changes since the last agreement (script writes, deletions, expiries), into the daemon.
    private func syncFromBrowser() throws {
        let changes = mirror.browserChanged(try browserStore())
        for (cookie, expired) in changes.stored.map({ ($0, false) }) + changes.deleted.map({ ($0, true) }) {
            let (url, header) = cookie.setCookie(expired: expired)
            let result: SetCookieResult?
            do { result = try daemon.handleSetCookie(url: url, setCookie: [header]) } catch {
                guard case .rpc = error else { throw error }
                result = nil
            }
            log.count(.handleSetCookie)
            if !expired && (result?.stored ?? 0) == 0 {
                mirror.daemonRefused(cookie)
                log.warning("the daemon refused the browser's cookie \(LogText.cookie(cookie))")
            } else {
                log.debug("\(expired ? "deleted" : "stored") the browser's \(LogText.cookie(cookie)) in the daemon")
            }
        }
    }
}

/// Log text that names cookies and sites but never a value, a path's query or a fragment.
enum LogText {
    static func cookie(_ cookie: BrowserCookie) -> String { "\(cookie.name) (\(cookie.devToolsDomain)\(cookie.path))" }

    /// `https://host:port` of a URL.
    static func origin(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "a non-http URL" }
        let rest = url[schemeEnd.upperBound...]
        return String(url[..<schemeEnd.upperBound]) + String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
    }
}
