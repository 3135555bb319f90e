import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// Bounds that protect the daemon from its clients (sd-varlink's defaults, scaled to this job).
public struct ServerLimits: Sendable, Equatable {
    /// Longest request line; longer gets -32600 and the connection closes (API.md: 1 MiB).
    public var maxLineLength = 1 << 20
    public var maxConnections = 4096
    /// One user cannot take every connection (sd-varlink: 1024 per uid).
    public var maxConnectionsPerUser = 1024
    public var maxRequestsInFlight = 1024
    public var maxBatch = 1024

    public init() {}
}

/// A method implementation: reads its params, then calls `completion` exactly once, now or later.
public typealias MethodHandler = (Params, CallContext, @escaping (MethodOutcome) -> Void) throws(RPCError) -> Void

/// Accepts connections on the listening socket and routes their requests to the method table.
final class RPCServer: ConnectionOwner, EventHandler {
    let loop: EventLoop
    let limits: ServerLimits
    private(set) var isStopping = false
    let readBuffer: UnsafeMutableRawBufferPointer

    private let listener: FileDescriptor
    private let logger: Logger
    private var methods: [String: MethodHandler] = [:]
    private var connections: [UInt64: Connection] = [:]
    private var connectionsPerUser: [UInt32: Int] = [:]
    private var nextConnectionID: UInt64 = 1
    private var listening = false

    /// Called whenever the last connection closes or the first one opens (idle tracking).
    var onConnectionCountChange: ((Int) -> Void)?

    init(loop: EventLoop, listener: FileDescriptor, limits: ServerLimits, logger: Logger) {
        self.loop = loop
        self.listener = listener
        self.limits = limits
        self.logger = logger
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit { readBuffer.deallocate() }

    var connectionCount: Int { connections.count }

    func register(_ method: Method, _ handler: @escaping MethodHandler) {
        methods[method.rawValue] = handler
    }

    func startListening() throws(SystemError) {
        try loop.register(listener, events: EpollEvents.readable, handler: self)
        listening = true
    }

    // MARK: accepting

    func handleEvents(_ events: UInt32) {
        while listening {
            let accepted: IOResult<FileDescriptor>
            do {
                accepted = try UnixSocket.accept(listener)
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    // Out of descriptors: pause accepting briefly instead of spinning on a ready listener.
                    logger.warning("Failed to accept a connection: \(error); pausing for 100 ms")
                    pauseAccepting(milliseconds: 100)
                } else if error.errno != ECONNABORTED {
                    logger.warning("Failed to accept a connection: \(error)")
                }
                return
            }
            guard case .done(let fd) = accepted else { return }
            admit(fd)
        }
    }

    private func pauseAccepting(milliseconds: Int64) {
        loop.unregister(listener)
        listening = false
        loop.schedule(afterMilliseconds: milliseconds) { [weak self] in
            guard let self, !self.isStopping, !self.listening else { return }
            try? self.startListening()
        }
    }

    private func admit(_ fd: FileDescriptor) {
        let peer: PeerCredentials
        do {
            peer = try UnixSocket.peerCredentials(fd)
        } catch {
            logger.warning("Failed to read peer credentials: \(error)")
            fd.close()
            return
        }
        let userCount = connectionsPerUser[peer.uid, default: 0]
        if connections.count >= limits.maxConnections {
            refuse(fd, .limitExceeded("connections", limit: limits.maxConnections))
            return
        }
        if userCount >= limits.maxConnectionsPerUser {
            refuse(fd, .limitExceeded("connections of one user", limit: limits.maxConnectionsPerUser))
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = Connection(id: id, fd: fd, peer: peer, owner: self)
        do {
            try connection.start()
        } catch {
            logger.warning("Failed to watch a new connection: \(error)")
            fd.close()
            return
        }
        connections[id] = connection
        connectionsPerUser[peer.uid] = userCount + 1
        onConnectionCountChange?(connections.count)
    }

    /// Tells the client why, in one line, then closes.
    private func refuse(_ fd: FileDescriptor, _ error: RPCError) {
        var out: [UInt8] = []
        RPCEncoder.writeError(error, id: .null, to: &out)
        out.append(0x0A)
        _ = out.withUnsafeBytes { try? fd.send($0) }
        fd.close()
    }

    func connectionDidClose(_ connection: Connection) {
        connections[connection.id] = nil
        let uid = connection.context.peer.uid
        let remaining = connectionsPerUser[uid, default: 1] - 1
        connectionsPerUser[uid] = remaining > 0 ? remaining : nil
        onConnectionCountChange?(connections.count)
    }

    // MARK: dispatch

    func execute(_ request: RPCRequest, context: CallContext, completion: @escaping (MethodOutcome) -> Void) {
        guard let handler = methods[request.method] else {
            completion(.failure(.methodNotFound(request.method)))
            return
        }
        do {
            try handler(Params(request.params), context, completion)
        } catch {
            completion(.failure(error))
        }
    }

    // MARK: shutdown

    /// Stops accepting and lets every connection finish what it has read.
    func beginShutdown() {
        guard !isStopping else { return }
        isStopping = true
        if listening {
            loop.unregister(listener)
            listening = false
        }
        for connection in Array(connections.values) { connection.settle() }
    }

    /// Closes whatever is left (after the shutdown grace period).
    func closeAll() {
        for connection in Array(connections.values) { connection.abort() }
    }
}
