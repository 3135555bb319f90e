import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import Synchronization

/// One request as the fake server received it.
public struct FakeHTTPRequest: Sendable {
    public let method: String
    /// Path with query, as on the request line.
    public let target: String
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    /// Which accepted connection carried it (0, 1, ...), to observe connection reuse.
    public let connection: Int

    /// The target without its query.
    public var path: String { String(target.prefix { $0 != "?" }) }

    /// A percent-decoded query parameter (`+` is not treated as a space).
    public func queryValue(_ name: String) -> String? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if FakeHTTPRequest.percentDecode(parts[0]) == name {
                return parts.count > 1 ? FakeHTTPRequest.percentDecode(parts[1]) : ""
            }
        }
        return nil
    }

    /// The first header called `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func percentDecode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// What the fake server does with a request.
public indirect enum FakeHTTPAction: Sendable {
    /// Answers; Content-Length is added unless given or the headers say `Connection: close`.
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Never answers, until the server stops or the client goes away.
    case hang
    /// Closes the connection without answering.
    case close
    /// Sends `bytes` as they are (a response framed, or malformed, by the test), then closes the
    /// connection when `thenClose`, else reads the next request on it.
    case raw([UInt8], thenClose: Bool)
    case delay(ms: Int, then: FakeHTTPAction)

    public static func json(_ text: String, status: Int = 200) -> FakeHTTPAction {
        .respond(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
    }

    public static func text(_ text: String, status: Int = 200) -> FakeHTTPAction {
        .respond(status: status, headers: [("Content-Type", "text/plain")], body: Array(text.utf8))
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1 (kernel-chosen port) for tests of upstream clients.
///
/// One thread accepts; each connection gets a thread, so a `.hang` on one does not block others.
/// Keep-alive and Content-Length request bodies are supported; chunked request bodies are not.
/// Every request is recorded before it is acted on. `stop()` (or releasing the server) closes
/// everything and joins the threads.
public final class FakeHTTPServer: Sendable {
    public let port: UInt16
    private let core: Core

    /// The loopback address it listens on.
    public let address: String

    /// A server on `address` (in 127.0.0.0/8) and `port` (0: the kernel picks).
    public init(
        address: String = "127.0.0.1", port: UInt16 = 0,
        handler: @escaping @Sendable (FakeHTTPRequest) -> FakeHTTPAction
    ) throws(SystemError) {
        let (listener, port) = try TCPSocket.listenLoopback(address: address, port: port)
        self.port = port
        self.address = address
        self.core = Core(listener: listener, handler: handler)
        let core = self.core
        let thread = spawnThread(joinable: true) { core.acceptLoop() }
        core.state.withLock { $0.acceptThread = thread }
    }

    deinit { core.stop() }

    /// `http://ADDRESS:PORT`, no trailing slash.
    public var baseURL: String { "http://\(address):\(port)" }

    /// Every request received so far, in arrival order.
    public var requests: [FakeHTTPRequest] { core.state.withLock { $0.requests } }
    public var requestCount: Int { core.state.withLock { $0.requests.count } }
    /// TCP connections accepted so far.
    public var acceptedConnections: Int { core.state.withLock { $0.accepted } }

    /// Closes the listener and every connection (a hanging one too) and waits for the threads. Idempotent.
    public func stop() { core.stop() }

    // MARK: - Internals

    fileprivate struct State {
        var requests: [FakeHTTPRequest] = []
        var accepted = 0
        var stopping = false
        var stopped = false
        var acceptThread: pthread_t?
        var connectionThreads: [pthread_t] = []
    }

    fileprivate final class Core: Sendable {
        let listener: FileDescriptor
        let handler: @Sendable (FakeHTTPRequest) -> FakeHTTPAction
        let state = Mutex(State())
        /// How often blocked threads look at the stop flag.
        static let pollIntervalMs: Int32 = 20

        init(listener: FileDescriptor, handler: @escaping @Sendable (FakeHTTPRequest) -> FakeHTTPAction) {
            self.listener = listener
            self.handler = handler
        }

        var stopping: Bool { state.withLock { $0.stopping } }

        func stop() {
            let acceptThread: pthread_t? = state.withLock { state in
                guard !state.stopping else { return nil }
                state.stopping = true
                return state.acceptThread
            }
            guard let acceptThread else { return }
            pthread_join(acceptThread, nil)
            // No new connection threads appear once the accept loop has ended.
            let threads = state.withLock { $0.connectionThreads }
            for thread in threads { pthread_join(thread, nil) }
            listener.close()
            state.withLock { $0.stopped = true }
        }

        func acceptLoop() {
            while !stopping {
                guard (try? listener.wait(for: .readable, timeoutMilliseconds: Core.pollIntervalMs)) == true else {
                    continue
                }
                guard case .done(let fd)? = try? TCPSocket.accept(listener) else { continue }
                let index = state.withLock { state in
                    state.accepted += 1
                    return state.accepted - 1
                }
                let thread = spawnThread(joinable: true) { [self] in serve(fd, connection: index) }
                state.withLock { $0.connectionThreads.append(thread) }
            }
        }

        private func serve(_ fd: FileDescriptor, connection: Int) {
            defer { fd.close() }
            var buffer: [UInt8] = []
            while !stopping {
                switch RequestParser.parse(buffer, connection: connection) {
                case .incomplete:
                    guard readMore(fd, into: &buffer) else { return }
                case .invalid:
                    _ = send(fd, response(status: 400, headers: [("Connection", "close")], body: []))
                    return
                case .complete(let request, let consumed, let keepAlive):
                    buffer.removeFirst(consumed)
                    state.withLock { $0.requests.append(request) }
                    guard perform(handler(request), on: fd, keepAlive: keepAlive), keepAlive else { return }
                }
            }
        }

        /// Carries out an action; false when the connection must end.
        private func perform(_ action: FakeHTTPAction, on fd: FileDescriptor, keepAlive: Bool) -> Bool {
            switch action {
            case .respond(let status, let headers, let body):
                var headers = headers
                if !keepAlive && !headers.contains(where: { $0.0.lowercased() == "connection" }) {
                    headers.append(("Connection", "close"))
                }
                let sent = send(fd, response(status: status, headers: headers, body: body))
                let closes = headers.contains { $0.0.lowercased() == "connection" && $0.1.lowercased() == "close" }
                return sent && !closes
            case .close:
                return false
            case .raw(let bytes, let thenClose):
                return send(fd, bytes) && !thenClose
            case .hang:
                // Wait for stop, or for the client to give up (end of file).
                var sink: [UInt8] = []
                while !stopping {
                    guard readMore(fd, into: &sink) else { return false }
                    sink.removeAll()
                }
                return false
            case .delay(let ms, let then):
                // A slow upstream is the behaviour scripted here; sliced to notice a stop.
                var remaining = ms
                while remaining > 0 && !stopping {
                    let slice = min(remaining, Int(Core.pollIntervalMs))
                    usleep(UInt32(slice * 1000))
                    remaining -= slice
                }
                return stopping ? false : perform(then, on: fd, keepAlive: keepAlive)
            }
        }

        /// Waits (in stop-checking slices) for bytes; false at end of file, on error or on stop.
        private func readMore(_ fd: FileDescriptor, into buffer: inout [UInt8]) -> Bool {
            while !stopping {
                guard let readable = try? fd.wait(for: .readable, timeoutMilliseconds: Core.pollIntervalMs) else {
                    return false
                }
                guard readable else { continue }
                var chunk = [UInt8](repeating: 0, count: 16384)
                let result = chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try fd.read(into: raw) }
                }
                switch result {
                case .success(.done(let count)):
                    guard count > 0 else { return false }
                    buffer.append(contentsOf: chunk[..<count])
                    return true
                case .success(.wouldBlock):
                    continue
                case .failure:
                    return false
                }
            }
            return false
        }

        private func send(_ fd: FileDescriptor, _ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let result = bytes[offset...].withUnsafeBytes { raw in
                    Result { () throws(SystemError) in try fd.send(raw) }
                }
                switch result {
                case .success(.done(let count)): offset += count
                case .success(.wouldBlock):
                    // The peer reads slowly: wait for room (in slices, to notice a stop).
                    _ = try? fd.wait(for: .writable, timeoutMilliseconds: Core.pollIntervalMs)
                case .failure: return false
                }
                if stopping { return false }
            }
            return true
        }

        private func response(status: Int, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
            var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            // Without a length, `Connection: close` ends the body (HTTP/1.1 section 6.3, item 7).
            let closes = headers.contains { $0.0.lowercased() == "connection" && $0.1.lowercased() == "close" }
            if !closes && !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
                text += "Content-Length: \(body.count)\r\n"
            }
            text += "\r\n"
            return Array(text.utf8) + body
        }

        private func reason(_ status: Int) -> String {
            switch status {
            case 200: return "OK"
            case 400: return "Bad Request"
            case 403: return "Forbidden"
            case 404: return "Not Found"
            case 405: return "Method Not Allowed"
            case 500: return "Internal Server Error"
            case 503: return "Service Unavailable"
            default: return "Status"
            }
        }
    }
}

/// HTTP/1.1 request framing: request line, headers, Content-Length body.
private enum RequestParser {
    enum Outcome {
        case incomplete
        case invalid
        case complete(FakeHTTPRequest, consumed: Int, keepAlive: Bool)
    }

    static let maxHeaderBytes = 64 * 1024

    static func parse(_ buffer: [UInt8], connection: Int) -> Outcome {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let headerEnd = firstIndex(of: terminator, in: buffer) else {
            return buffer.count > maxHeaderBytes ? .invalid : .incomplete
        }
        let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        guard let requestLine = lines.popFirst() else { return .invalid }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return .invalid }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return .invalid }
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers.append((String(line[..<colon]), String(value)))
        }
        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        if header("transfer-encoding") != nil { return .invalid }
        let length = header("content-length").map { Int($0) } ?? 0
        guard let length, length >= 0 else { return .invalid }
        let bodyStart = headerEnd + 4
        guard buffer.count >= bodyStart + length else { return .incomplete }
        let connectionHeader = header("connection")?.lowercased()
        let keepAlive = parts[2] == "HTTP/1.1" ? connectionHeader != "close" : connectionHeader == "keep-alive"
        let request = FakeHTTPRequest(
            method: String(parts[0]), target: String(parts[1]), headers: headers,
            body: Array(buffer[bodyStart..<(bodyStart + length)]), connection: connection)
        return .complete(request, consumed: bodyStart + length, keepAlive: keepAlive)
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}

extension FakeHTTPServer {
    /// A fake of Alibaba's v1 HTTPDNS API under `/{account}/`: `d`, `resolve` (at most 5 hosts) and,
    /// when `signatureCheck` is given, only the signed `sign_d`/`sign_resolve` (unsigned calls then get
    /// `UnsignedInterfaceDisabled`, as when the console switch is on).
    ///
    /// Errors follow the documented codes: `InvalidAccount` (403) for another account, `InvalidHost`
    /// (400) for a host not in `answers`, `MissingArgument`, `TooManyHosts`, `InvalidSignature` (403).
    /// `signatureCheck(signed, t, s)` gets the host (or comma-joined list), `t` and `s` of a signed call.
    public static func alibaba(
        account: String = "100000",
        answers: [String: (v4: [String], v6: [String], ttl: Int)],
        signatureCheck: (@Sendable (_ signed: String, _ t: String, _ s: String) -> Bool)? = nil,
        address: String = "127.0.0.1", port: UInt16 = 0
    ) throws(SystemError) -> FakeHTTPServer {
        try FakeHTTPServer(address: address, port: port) { request in
            AlibabaFake(account: account, answers: answers, signatureCheck: signatureCheck).handle(request)
        }
    }

    /// `baseURL` plus the account path, i.e. what the daemon's `Upstream=alibaba` URL would be.
    public func alibabaURL(account: String = "100000") -> String { "\(baseURL)/\(account)" }
}

private struct AlibabaFake {
    let account: String
    let answers: [String: (v4: [String], v6: [String], ttl: Int)]
    let signatureCheck: (@Sendable (String, String, String) -> Bool)?

    func handle(_ request: FakeHTTPRequest) -> FakeHTTPAction {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count == 2, segments[0] == account else { return error("InvalidAccount", status: 403) }
        guard request.method == "GET" else { return error("MethodNotAllowed", status: 405) }
        let endpoint = String(segments[1])
        let signed = endpoint.hasPrefix("sign_")
        guard let host = request.queryValue("host"), !host.isEmpty else { return error("MissingArgument") }
        if let signatureCheck {
            guard signed else { return error("UnsignedInterfaceDisabled", status: 403) }
            guard let t = request.queryValue("t"), let s = request.queryValue("s") else {
                return error("MissingArgument")
            }
            guard signatureCheck(host, t, s) else { return error("InvalidSignature", status: 403) }
        }
        let query = request.queryValue("query") ?? "4"
        switch signed ? String(endpoint.dropFirst(5)) : endpoint {
        case "d":
            guard !host.contains(",") else { return error("TooManyHosts") }
            guard let entry = entry(for: host, query: query) else { return error("InvalidHost") }
            return .json(entry.encodedString)
        case "resolve":
            let hosts = host.split(separator: ",").map(String.init)
            guard hosts.count <= 5 else { return error("TooManyHosts") }
            let entries = hosts.compactMap { entry(for: $0, query: query) }
            return .json(JSON.object(["dns": .array(entries)]).encodedString)
        default:
            return .respond(status: 404, headers: [], body: [])
        }
    }

    private func entry(for host: String, query: String) -> JSON? {
        guard let answer = answers[host] else { return nil }
        var object: JSONObject = ["host": .string(host)]
        if query.contains("4") { object.append("ips", .array(answer.v4.map { .string($0) })) }
        if query.contains("6") { object.append("ipsv6", .array(answer.v6.map { .string($0) })) }
        object.append("ttl", .int(answer.ttl))
        object.append("origin_ttl", .int(answer.ttl))
        return .object(object)
    }

    private func error(_ code: String, status: Int = 400) -> FakeHTTPAction {
        .json(JSON.object(["code": .string(code)]).encodedString, status: status)
    }
}
