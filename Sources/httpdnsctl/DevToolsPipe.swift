import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// Why the browser session could not go on.
struct BrowserFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// One event the browser sent: a CDP method without an id, with the session it came from
/// (nil for the browser's own session).
struct DevToolsEvent {
    let method: String
    let params: JSON
    let sessionID: String?
}

/// How CDP messages travel: Chromium's pipe (`PipeTransport`) or a WebSocket (`WebSocketTransport`).
protocol DevToolsTransport: AnyObject {
    /// The descriptor to poll for incoming messages.
    var readable: FileDescriptor { get }
    /// Set once the browser closed its end.
    var closed: Bool { get }
    func send(_ message: [UInt8], deadline: Int64) throws(BrowserFailure)
    /// The complete messages received, reading first; with `deadline` nil it reads only what
    /// is ready and may return none.
    func receive(until deadline: Int64?) throws(BrowserFailure) -> [[UInt8]]
}

/// A CDP client: `call` waits for its own reply and keeps the events that arrive meanwhile for
/// `takeEvents`; `send` does not wait (replies to it are dropped). Every wait has a deadline.
final class DevToolsPipe {
    /// A message longer than this ends the session (a whole cookie store fits many times over).
    static let maxMessageLength = 64 << 20
    /// How long one command may take to be answered.
    static let callTimeoutMilliseconds: Int64 = 15_000
    /// How long the first command may take: a browser starting on a busy machine answers late.
    static let startTimeoutMilliseconds: Int64 = 60_000

    private let transport: any DevToolsTransport
    private var nextID = 1
    private var events: [DevToolsEvent] = []

    init(_ transport: any DevToolsTransport) { self.transport = transport }

    /// Chromium's `--remote-debugging-pipe` (`TiedChild.input` and `.output`).
    convenience init(input: FileDescriptor, output: FileDescriptor) {
        self.init(PipeTransport(input: input, output: output))
    }

    var readable: FileDescriptor { transport.readable }
    var closed: Bool { transport.closed }

    /// Sends a command and returns its id without waiting for the reply.
    @discardableResult
    func send(_ method: String, _ params: JSONObject = JSONObject(), session: String? = nil) throws(BrowserFailure)
        -> Int
    {
        let id = nextID
        nextID += 1
        var message: JSONObject = ["id": .int(id), "method": .string(method), "params": .object(params)]
        if let session { message.append("sessionId", .string(session)) }
        try transport.send(
            JSON.object(message).encoded, deadline: MonotonicClock.nowMilliseconds() + Self.callTimeoutMilliseconds)
        return id
    }

    /// Sends a command and waits for its result; a CDP error becomes a failure naming the method.
    func call(
        _ method: String, _ params: JSONObject = JSONObject(), session: String? = nil,
        timeoutMilliseconds: Int64 = DevToolsPipe.callTimeoutMilliseconds
    ) throws(BrowserFailure) -> JSON {
        let id = try send(method, params, session: session)
        let deadline = MonotonicClock.nowMilliseconds() + timeoutMilliseconds
        while true {
            for message in try parse(transport.receive(until: deadline)) {
                guard let replyID = message["id"]?.numberValue?.int64Value else {
                    keepEvent(message)
                    continue
                }
                guard replyID == id else { continue }
                if let error = message["error"] {
                    throw BrowserFailure("\(method): \(error["message"]?.stringValue ?? error.encodedString)")
                }
                return message["result"] ?? .null
            }
        }
    }

    /// Reads what the browser sent, if anything is ready, into the event queue (replies to `send`
    /// are dropped).
    func readAvailable() throws(BrowserFailure) {
        for message in try parse(transport.receive(until: nil)) where message["id"] == nil {
            keepEvent(message)
        }
    }

    /// The events received so far, oldest first; the queue is emptied.
    func takeEvents() -> [DevToolsEvent] {
        defer { events.removeAll() }
        return events
    }

    private func parse(_ messages: [[UInt8]]) throws(BrowserFailure) -> [JSON] {
        var parsed: [JSON] = []
        for body in messages {
            do { parsed.append(try JSONParser.parse(body, maxDepth: 128)) } catch {
                throw BrowserFailure("the browser sent a message that is not JSON (\(error.description))")
            }
        }
        return parsed
    }

    private func keepEvent(_ message: JSON) {
        guard let method = message["method"]?.stringValue else { return }
        events.append(
            DevToolsEvent(
                method: method, params: message["params"] ?? .null, sessionID: message["sessionId"]?.stringValue))
    }

    /// Waits for `readiness` on `fd` until `deadline`, or fails saying what was waited for.
    static func wait(
        for readiness: PollReadiness, on fd: FileDescriptor, until deadline: Int64, doing what: String
    ) throws(BrowserFailure) {
        let remaining = deadline - MonotonicClock.nowMilliseconds()
        let ready =
            remaining > 0 && ((try? fd.wait(for: readiness, timeoutMilliseconds: Int32(clamping: remaining))) ?? true)
        if !ready { throw BrowserFailure("the browser did not answer \(what) in time") }
    }
}

/// `--remote-debugging-pipe`: the browser reads JSON messages ended by NUL on its fd 3 and
/// writes them on its fd 4.
final class PipeTransport: DevToolsTransport {
    private let input: FileDescriptor
    private let output: FileDescriptor
    private var received: [UInt8] = []
    private var scanned = 0
    private(set) var closed = false

    init(input: FileDescriptor, output: FileDescriptor) {
        self.input = input
        self.output = output
    }

    var readable: FileDescriptor { output }

    func send(_ message: [UInt8], deadline: Int64) throws(BrowserFailure) {
        let bytes = message + [0]
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try input.write(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch result {
            case .success(.done(let count)): offset += count
            case .success(.wouldBlock):
                try DevToolsPipe.wait(for: .writable, on: input, until: deadline, doing: "a command")
            case .failure: throw BrowserFailure("the browser closed its DevTools pipe")
            }
        }
    }

    func receive(until deadline: Int64?) throws(BrowserFailure) -> [[UInt8]] {
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            var messages: [[UInt8]] = []
            while let end = received[scanned...].firstIndex(of: 0) {
                messages.append(Array(received[..<end]))
                received.removeSubrange(...end)
                scanned = 0
            }
            scanned = received.count
            if !messages.isEmpty { return messages }
            if received.count > DevToolsPipe.maxMessageLength {
                throw BrowserFailure("the browser sent a message longer than \(DevToolsPipe.maxMessageLength) bytes")
            }
            if closed { throw BrowserFailure("the browser closed its DevTools pipe") }
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try output.read(into: raw) }
            }
            switch result {
            case .success(.done(0)), .failure:
                closed = true
            case .success(.done(let count)):
                received += chunk[..<count]
            case .success(.wouldBlock):
                guard let deadline else { return [] }
                try DevToolsPipe.wait(for: .readable, on: output, until: deadline, doing: "a command")
            }
        }
    }
}
