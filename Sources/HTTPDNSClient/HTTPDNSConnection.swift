import HTTPDNSProtocol
import HTTPDNSSystem

/// A connection to httpdnsd: newline-delimited JSON-RPC 2.0 over its Unix socket.
///
/// It connects lazily at the first call, assigns request ids, and matches responses by id (the
/// daemon may answer pipelined requests out of order). When the daemon closes the connection
/// before answering (with socket activation it may just have exited idle), a call reconnects
/// and resends once, never twice. Not thread-safe: use it from one thread at a time.
public final class HTTPDNSConnection {
    /// Where the daemon listens, after the clients' rule (`DaemonSocketPath`).
    public let socketPath: String
    /// How long a call waits for its reply when it does not say otherwise.
    public var defaultTimeoutMilliseconds: Int

    /// Replies larger than this are refused (an exported cookie jar fits many times over).
    public static let maxReplyLength = 64 << 20
    /// Long enough for a resolve with the daemon's default upstream timeout and a retry.
    public static let standardTimeoutMilliseconds = 30_000

    private var descriptor: FileDescriptor?
    private var framer = LineFramer(maxLineLength: HTTPDNSConnection.maxReplyLength)
    private var nextID: Int64 = 1
    /// Notifications read and not yet handed out (`subscribe`).
    private var notifications: [JSON] = []

    /// `socketPath` nil applies the client rule (`$HTTPDNSD_SOCKET`, the per-user socket, the system socket).
    public init(socketPath: String?, timeoutMilliseconds: Int = HTTPDNSConnection.standardTimeoutMilliseconds) {
        self.socketPath = DaemonSocketPath.resolve(explicit: socketPath)
        self.defaultTimeoutMilliseconds = timeoutMilliseconds
    }

    deinit { descriptor?.close() }

    /// Whether a socket is open (the daemon may still have closed its end).
    public var isConnected: Bool { descriptor != nil }

    /// Connects now instead of at the first call, to report an absent daemon early.
    public func connect() throws(ClientError) {
        _ = try connectedDescriptor()
    }

    /// Closes the socket; the next call connects again.
    public func disconnect() {
        descriptor?.close()
        descriptor = nil
        framer = LineFramer(maxLineLength: Self.maxReplyLength)
        notifications.removeAll()
    }

    /// Calls `method` with by-name `params` and returns its `result`.
    public func call(
        _ method: String, params: JSONObject = JSONObject(), timeoutMilliseconds: Int? = nil
    ) throws(ClientError) -> JSON {
        let outcomes = try pipeline([(method, params)], timeoutMilliseconds: timeoutMilliseconds)
        switch outcomes[0] {
        case .success(let result): return result
        case .failure(let error): throw .rpc(error)
        }
    }

    /// Sends every request before reading any reply, and returns the outcomes in request order
    /// whatever order the daemon answers in. A daemon error for one request does not fail the others.
    public func pipeline(
        _ requests: [(method: String, params: JSONObject)], timeoutMilliseconds: Int? = nil
    ) throws(ClientError) -> [Result<JSON, RPCError>] {
        let timeout = timeoutMilliseconds ?? defaultTimeoutMilliseconds
        let deadline = MonotonicClock.nowMilliseconds() + Int64(timeout)
        var outcomes = [Result<JSON, RPCError>?](repeating: nil, count: requests.count)
        var reconnected = false
        while true {
            let unanswered = outcomes.indices.filter { outcomes[$0] == nil }
            do throws(TransportFailure) {
                try exchange(requests, indices: unanswered, into: &outcomes, deadline: deadline)
                return outcomes.map { $0! }
            } catch {
                disconnect()
                switch error {
                case .client(let clientError):
                    throw clientError
                case .timedOut:
                    throw .timeout(socketPath: socketPath, milliseconds: timeout)
                case .closedByPeer:
                    if reconnected { throw .connectionClosed(socketPath: socketPath) }
                    reconnected = true
                }
            }
        }
    }

    // MARK: subscriptions

    /// Calls a method whose answer opens a subscription (`monitor`) and returns its result; the
    /// connection then carries the subscription's notifications (`nextNotification`) until it
    /// is closed, and no other call should use it.
    public func subscribe(
        _ method: String, params: JSONObject = JSONObject(), timeoutMilliseconds: Int? = nil
    ) throws(ClientError) -> JSON {
        let timeout = timeoutMilliseconds ?? defaultTimeoutMilliseconds
        let deadline = MonotonicClock.nowMilliseconds() + Int64(timeout)
        let id = nextID
        nextID += 1
        do throws(TransportFailure) {
            let fd: FileDescriptor
            do { fd = try connectedDescriptor() } catch { throw .client(error) }
            var line = JSONOutput()
            RPCRequest(id: .number(JSONNumber(id)), method: method, params: params).json.write(to: &line)
            line.append(0x0A)
            try sendAll(line.bytes, on: fd, deadline: deadline)
            while true {
                for message in try readMessages(on: fd, deadline: deadline) {
                    guard message["id"] != nil else {
                        notifications.append(message)
                        continue
                    }
                    guard let response = RPCResponse(json: message) else {
                        throw .client(
                            .malformedResponse("not a JSON-RPC 2.0 response: \(Self.excerpt(message.encoded))"))
                    }
                    guard response.id == .number(JSONNumber(id)) else { continue }
                    switch response.outcome {
                    case .success(let result): return result
                    case .failure(let error): throw .client(.rpc(error))
                    }
                }
            }
        } catch {
            disconnect()
            switch error {
            case .client(let clientError): throw clientError
            case .timedOut: throw .timeout(socketPath: socketPath, milliseconds: timeout)
            case .closedByPeer: throw .connectionClosed(socketPath: socketPath)
            }
        }
    }

    /// The next notification of the subscription (`method` and `params`), waiting as long as it
    /// takes; nil once the daemon closed the connection.
    public func nextNotification() throws(ClientError) -> (method: String, params: JSON)? {
        while true {
            if !notifications.isEmpty {
                let message = notifications.removeFirst()
                guard let method = message["method"]?.stringValue else {
                    throw .malformedResponse("not a JSON-RPC 2.0 notification: \(Self.excerpt(message.encoded))")
                }
                return (method, message["params"] ?? .null)
            }
            guard let fd = descriptor else { return nil }
            do throws(TransportFailure) {
                notifications += try readMessages(on: fd, deadline: .max)
            } catch {
                disconnect()
                if case .client(let clientError) = error { throw clientError }
                return nil
            }
        }
    }

    // MARK: transport

    /// What can end one attempt; only `closedByPeer` is worth the one reconnect.
    private enum TransportFailure: Error {
        case closedByPeer
        case timedOut
        case client(ClientError)
    }

    private func connectedDescriptor() throws(ClientError) -> FileDescriptor {
        if let descriptor { return descriptor }
        do throws(SystemError) {
            let fd = try UnixSocket.connect(path: socketPath)
            do {
                // Non-blocking after connect, so a deadline bounds both sending and reading.
                try fd.setNonBlocking()
            } catch {
                fd.close()
                throw error
            }
            descriptor = fd
            return fd
        } catch {
            throw .unreachable(socketPath: socketPath, errno: Self.connectFailure(error.errno, path: socketPath))
        }
    }

    /// connect(2) answers ECONNREFUSED for a path that is a regular file or a directory, as for a socket that
    /// nobody listens on; ENOTSOCK says which it is.
    private static func connectFailure(_ errno: Errno, path: String) -> Errno {
        guard errno == .connectionRefused, Files.exists(path), !Files.isSocket(path) else { return errno }
        return .notSocket
    }

    /// One attempt: sends the requests at `indices` with fresh ids and stores their outcomes.
    private func exchange(
        _ requests: [(method: String, params: JSONObject)], indices: [Int],
        into outcomes: inout [Result<JSON, RPCError>?], deadline: Int64
    ) throws(TransportFailure) {
        let fd: FileDescriptor
        do { fd = try connectedDescriptor() } catch { throw .client(error) }
        var pending: [Int64: Int] = [:]
        var lines = JSONOutput()
        for index in indices {
            let id = nextID
            nextID += 1
            pending[id] = index
            RPCRequest(id: .number(JSONNumber(id)), method: requests[index].method, params: requests[index].params)
                .json.write(to: &lines)
            lines.append(0x0A)
        }
        try sendAll(lines.bytes, on: fd, deadline: deadline)
        while !pending.isEmpty {
            for response in try readResponses(on: fd, deadline: deadline) {
                switch response.id {
                case .number(let number):
                    // Ids of earlier, abandoned requests are skipped.
                    guard let id = number.int64Value, let index = pending.removeValue(forKey: id) else { continue }
                    outcomes[index] = response.outcome
                case .null:
                    // The daemon could not read a request's id (parse error, line too long): no
                    // way to tell which one, so the whole exchange fails with its error.
                    if case .failure(let error) = response.outcome { throw .client(.rpc(error)) }
                    throw .client(.malformedResponse("a result with a null id"))
                case .string:
                    continue
                }
            }
        }
    }

    private func sendAll(_ bytes: [UInt8], on fd: FileDescriptor, deadline: Int64) throws(TransportFailure) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in
                    try fd.send(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                }
            }
            switch result {
            case .success(.done(let sent)):
                offset += sent
            case .success(.wouldBlock):
                try waitFor(.writable, on: fd, deadline: deadline)
            case .failure(let error):
                throw Self.failure(error)
            }
        }
    }

    /// Reads until at least one complete line arrived, and returns the responses in it.
    private func readResponses(on fd: FileDescriptor, deadline: Int64) throws(TransportFailure) -> [RPCResponse] {
        var responses: [RPCResponse] = []
        for json in try readMessages(on: fd, deadline: deadline) {
            guard let response = RPCResponse(json: json) else {
                throw .client(.malformedResponse("not a JSON-RPC 2.0 response: \(Self.excerpt(json.encoded))"))
            }
            responses.append(response)
        }
        return responses
    }

    /// Reads until at least one complete line arrived, and returns its messages (a batch's elements
    /// one by one).
    private func readMessages(on fd: FileDescriptor, deadline: Int64) throws(TransportFailure) -> [JSON] {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var lines: [[UInt8]] = []
            var tooLong = false
            framer.drain { event in
                switch event {
                case .line(let line): lines.append(Array(line))
                case .tooLong: tooLong = true
                }
            }
            if tooLong { throw .client(.malformedResponse("a reply longer than \(Self.maxReplyLength) bytes")) }
            if !lines.isEmpty {
                var messages: [JSON] = []
                for line in lines {
                    let json: JSON
                    do { json = try JSONParser.parse(line) } catch {
                        throw .client(.malformedResponse("not JSON (\(error.description))"))
                    }
                    // A daemon never answers our single requests with a batch; accept one anyway.
                    messages += json.arrayValue ?? [json]
                }
                return messages
            }
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try fd.read(into: raw) }
            }
            switch result {
            case .success(.done(0)):
                throw .closedByPeer
            case .success(.done(let count)):
                chunk.withUnsafeBytes { raw in framer.append(UnsafeRawBufferPointer(rebasing: raw[..<count])) }
            case .success(.wouldBlock):
                try waitFor(.readable, on: fd, deadline: deadline)
            case .failure(let error):
                throw Self.failure(error)
            }
        }
    }

    private func waitFor(_ readiness: PollReadiness, on fd: FileDescriptor, deadline: Int64) throws(TransportFailure) {
        let remaining = deadline - MonotonicClock.nowMilliseconds()
        guard remaining > 0 else { throw .timedOut }
        let ready: Bool
        do {
            ready = try fd.wait(for: readiness, timeoutMilliseconds: Int32(clamping: remaining))
        } catch {
            throw Self.failure(error)
        }
        if !ready { throw .timedOut }
    }

    /// Any failure of an established socket (EPIPE, ECONNRESET, ...) means the daemon went away.
    private static func failure(_ error: SystemError) -> TransportFailure { .closedByPeer }

    private static func excerpt(_ line: [UInt8]) -> String {
        let text = String(decoding: line.prefix(80), as: UTF8.self)
        return line.count > 80 ? text + "..." : text
    }
}

@available(*, unavailable, message: "one thread at a time: give each thread its own connection")
extension HTTPDNSConnection: Sendable {}
