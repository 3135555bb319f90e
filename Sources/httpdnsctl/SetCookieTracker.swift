import HTTPDNSProtocol

/// Pairs the raw response headers the browser reports (`Network.responseReceivedExtraInfo`,
/// by request id, without a URL) with the URL each response came from (`requestWillBeSent`'s
/// `redirectResponse` for a redirect hop, `responseReceived` for the last), whichever comes
/// first. One request id carries every hop of a redirect chain; both kinds arrive in hop order.
struct SetCookieTracker {
    /// Responses that wait for their other half are dropped past this many (a browser that
    /// never sends one half must not grow this process).
    static let maxPending = 4096

    /// One response's `Set-Cookie` values and the URL they are for.
    struct Received: Equatable {
        let url: String
        let setCookie: [String]
    }

    private struct Pending {
        var urls: [String] = []
        var headers: [[String]] = []
        var touched: UInt64 = 0
    }

    private var pending: [String: Pending] = [:]
    private var clock: UInt64 = 0

    /// A response's URL. The caller leaves out responses that get no ExtraInfo (from the disk
    /// cache or a service worker): counted, they would take another response's headers.
    mutating func responseURL(_ url: String, session: String?, request: String) -> Received? {
        update(session, request) { $0.urls.append(url) }
    }

    /// A response's raw headers: the `Set-Cookie` lines (the browser joins repeated
    /// headers with newlines under one name, in any letter case).
    mutating func rawHeaders(_ headers: JSONObject, session: String?, request: String) -> Received? {
        var lines: [String] = []
        for (name, value) in headers where name.lowercased() == "set-cookie" {
            lines += (value.stringValue ?? "").split(separator: "\n").map(String.init)
        }
        return update(session, request) { $0.headers.append(lines) }
    }

    /// The request ended (finished or failed). ExtraInfo may still follow its response, so
    /// only an entry with nothing waiting goes; others go by age, at `maxPending`.
    mutating func finished(session: String?, request: String) {
        let key = Self.key(session, request)
        if let entry = pending[key], entry.urls.isEmpty, entry.headers.isEmpty { pending[key] = nil }
    }

    /// Every request of a session that went away.
    mutating func detached(session: String) {
        pending = pending.filter { !$0.key.hasPrefix(session + " ") }
    }

    private mutating func update(_ session: String?, _ request: String, _ change: (inout Pending) -> Void)
        -> Received?
    {
        clock += 1
        let key = Self.key(session, request)
        var entry = pending[key] ?? Pending()
        change(&entry)
        entry.touched = clock
        var received: Received?
        if !entry.urls.isEmpty && !entry.headers.isEmpty {
            let url = entry.urls.removeFirst()
            let lines = entry.headers.removeFirst()
            if !lines.isEmpty { received = Received(url: url, setCookie: lines) }
        }
        pending[key] = entry
        if pending.count > Self.maxPending, let oldest = pending.min(by: { $0.value.touched < $1.value.touched }) {
            pending[oldest.key] = nil
        }
        return received
    }

    private static func key(_ session: String?, _ request: String) -> String { "\(session ?? "-") \(request)" }
}
