import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import Synchronization

/// A JSON-RPC server on a temporary Unix socket, run on its own thread, that answers as a test
/// tells it to. It stands in for the daemon when testing clients (HTTPDNSClient, httpdnsctl,
/// libhttpdns.so): replies out of order, closes before answering, sends garbage.
///
/// Connections are served one after another on the server thread.
public final class FakeRPCServer: Sendable {
    /// What to do with one request.
    public enum Reply: Sendable {
        case result(JSON)
        case error(RPCError)
        /// Close the connection without answering (a daemon that exited idle).
        case closeConnection
        /// Send this text as one line instead of a response.
        case rawLine(String)
        /// Send nothing (the client is expected to time out).
        case noReply
    }

    /// One accepted connection, handed to a script on the server thread.
    public final class Connection {
        /// 0 for the first connection the server accepted, 1 for the next, ...
        public let index: Int
        private let fd: FileDescriptor
        private let server: FakeRPCServer
        private var framer = LineFramer(maxLineLength: 1 << 24)
        private var queued: [RPCRequest] = []
        public private(set) var isClosed = false

        init(index: Int, fd: FileDescriptor, server: FakeRPCServer) {
            self.index = index
            self.fd = fd
            self.server = server
        }

        /// The next request, or nil at end of file, on a malformed line or when the server stops.
        public func readRequest() -> RPCRequest? {
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while queued.isEmpty {
                guard !isClosed, !server.isStopping else { return nil }
                var malformed = false
                framer.drain { event in
                    guard case .line(let line) = event else {
                        malformed = true
                        return
                    }
                    switch RPCDecoder.decode(line: line, maxBatch: 100) {
                    case .single(.request(let request)): queued.append(request)
                    case .batch(let elements):
                        for case .request(let request) in elements { queued.append(request) }
                    default: malformed = true
                    }
                }
                if malformed { return nil }
                if !queued.isEmpty { break }
                guard (try? fd.wait(for: .readable, timeoutMilliseconds: 20)) == true else { continue }
                let result = chunk.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try fd.read(into: raw) }
                }
                switch result {
                case .success(.done(let count)) where count > 0:
                    chunk.withUnsafeBytes { raw in framer.append(UnsafeRawBufferPointer(rebasing: raw[..<count])) }
                case .success(.wouldBlock):
                    continue
                default:
                    return nil
                }
            }
            let request = queued.removeFirst()
            server.record(request)
            return request
        }

        /// Answers `request` (notifications get nothing, as JSON-RPC says).
        public func reply(to request: RPCRequest, _ reply: Reply) {
            switch reply {
            case .result(let result):
                guard let id = request.id else { return }
                var line = JSONOutput()
                RPCEncoder.writeResult(result, id: id, to: &line)
                send(line.bytes)
            case .error(let error):
                guard let id = request.id else { return }
                var line = JSONOutput()
                RPCEncoder.writeError(error, id: id, to: &line)
                send(line.bytes)
            case .closeConnection:
                close()
            case .rawLine(let text):
                send(Array(text.utf8))
            case .noReply:
                break
            }
        }

        /// Sends `bytes` and a newline.
        public func send(_ bytes: [UInt8]) {
            guard !isClosed else { return }
            var line = bytes
            line.append(0x0A)
            var offset = 0
            while offset < line.count {
                let result = line.withUnsafeBytes { raw in
                    Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
                }
                switch result {
                case .success(.done(let sent)): offset += sent
                case .success(.wouldBlock): _ = try? fd.wait(for: .writable, timeoutMilliseconds: 100)
                case .failure: return
                }
            }
        }

        public func close() {
            guard !isClosed else { return }
            isClosed = true
            fd.close()
        }
    }

    private struct State {
        var stopping = false
        var acceptedConnections = 0
        var requests: [RPCRequest] = []
    }

    /// The socket the server listens on (inside a private temporary directory).
    public let socketPath: String
    private let directory: TemporaryDirectory
    private let listener: FileDescriptor
    private let state = Mutex(State())
    private let thread = Mutex<pthread_t?>(nil)

    /// Serves each connection with `script`; the connection is closed when the script returns.
    public init(script: @escaping @Sendable (Connection) -> Void) throws(SystemError) {
        directory = TemporaryDirectory(prefix: "httpdns-test")
        socketPath = directory.file("fake.sock")
        listener = try UnixSocket.listen(path: socketPath, backlog: 16)
        start(script)
    }

    /// Answers every request with `handler(request, connectionIndex)`.
    public convenience init(handler: @escaping @Sendable (RPCRequest, Int) -> Reply) throws(SystemError) {
        try self.init(script: { connection in
            while let request = connection.readRequest() {
                connection.reply(to: request, handler(request, connection.index))
                if connection.isClosed { return }
            }
        })
    }

    deinit { stop() }

    /// How many connections were accepted so far.
    public var acceptedConnections: Int { state.withLock { $0.acceptedConnections } }

    /// Every request read so far, in arrival order.
    public var receivedRequests: [RPCRequest] { state.withLock { $0.requests } }

    fileprivate var isStopping: Bool { state.withLock { $0.stopping } }

    fileprivate func record(_ request: RPCRequest) { state.withLock { $0.requests.append(request) } }

    /// Stops the thread, closes the socket and removes the temporary directory. Idempotent.
    public func stop() {
        let alreadyStopping = state.withLock { state in
            defer { state.stopping = true }
            return state.stopping
        }
        guard !alreadyStopping else { return }
        if let running = thread.withLock({ $0 }) { pthread_join(running, nil) }
        listener.close()
        directory.remove()
    }

    /// A socket path where nothing listens (a daemon that is absent): in a private temporary
    /// directory that is already removed again, so nothing can appear there either.
    public static func absentSocketPath() -> String {
        TemporaryDirectory(prefix: "httpdns-test").file("absent.sock")
    }

    private func start(_ script: @escaping @Sendable (Connection) -> Void) {
        let handle = spawnThread(joinable: true) { [self] in self.serve(script) }
        thread.withLock { $0 = handle }
    }

    private func serve(_ script: (Connection) -> Void) {
        while !isStopping {
            guard (try? listener.wait(for: .readable, timeoutMilliseconds: 20)) == true else { continue }
            guard case .done(let fd)? = try? UnixSocket.accept(listener) else { continue }
            let index = state.withLock { state in
                defer { state.acceptedConnections += 1 }
                return state.acceptedConnections
            }
            let connection = Connection(index: index, fd: fd, server: self)
            script(connection)
            connection.close()
        }
    }
}
