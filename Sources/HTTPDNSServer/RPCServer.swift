import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// Bounds that protect the daemon from its clients (sd-varlink's defaults, scaled to this job).
public struct ServerLimits: Sendable, Equatable {
    /// Longest request line; longer gets -32600 and the connection closes (1 MiB by default: httpdnsd-rpc(7), FRAMING).
    public var maxLineLength = 1 << 20
    public var maxConnections = 4096
    /// One user cannot take every connection (sd-varlink: 1024 per uid).
    public var maxConnectionsPerUser = 1024
    /// Unanswered requests (notifications included) on one connection; -32003 beyond.
    public var maxRequestsInFlight = 1024
    /// Unanswered requests of one uid across its connections; -32003 beyond.
    public var maxRequestsInFlightPerUser = 4096
    public var maxBatch = 1024
    /// A connection with nothing in flight that moves no byte for this long is closed (0: never).
    public var idleTimeoutMilliseconds: Int64 = 300_000
    /// A connection holding an unfinished line for this long is closed (0: never).
    public var lineTimeoutMilliseconds: Int64 = 10_000
    /// Lines one connection may run per loop turn, so that no client holds the loop for long.
    public var requestsPerTurn = 64
    /// A connection stops running requests while this much of its output waits for the client
    /// (checked before each request, so one large answer may go past it).
    public var maxPendingOutput = 512 << 10
    /// The same across all connections of one uid.
    public var maxPendingOutputPerUser = 4 << 20

    /// The least `maxBufferedInputPerUser` may be, whatever `maxLineLength` is.
    public var minBufferedInputPerUser = 16 << 20

    public init() {}

    /// Bytes of received, unprocessed request data one uid may hold across its connections
    /// (unfinished lines, mostly): room for two maximal lines, and never less than 16 MiB.
    public var maxBufferedInputPerUser: Int { max(minBufferedInputPerUser, 2 * maxLineLength) }
    /// The same across all users: four users' worth.
    public var maxBufferedInput: Int { 4 * maxBufferedInputPerUser }
}

/// What one uid holds across its connections, for the per-user caps.
final class UserLoad {
    let uid: UInt32
    var connections = 0
    var inFlight = 0
    var bufferedInput = 0
    var pendingOutput = 0

    init(uid: UInt32) { self.uid = uid }

    var isUnused: Bool { connections == 0 && inFlight == 0 }
}

/// Accepts connections on the listening socket and routes their requests to the method table.
///
/// Output is batched per loop turn: responses produced during a turn are appended to their
/// connection's output and sent at the end of the turn, one `send` per connection.
final class RPCServer: EventHandler {
    typealias Accept = (FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor>
    typealias PeerCredentialsReader = (FileDescriptor) throws(SystemError) -> PeerCredentials

    let loop: EventLoop
    private(set) var limits: ServerLimits
    private(set) var isStopping = false
    let readBuffer: UnsafeMutableRawBufferPointer
    /// The request path's decoder, shared by the connections of this (single) loop thread.
    var scanner = RequestScanner()
    /// Bytes of received, unprocessed request data across all connections.
    var bufferedInput = 0

    private let listener: FileDescriptor
    private let logger: Logger
    private let accept: Accept
    private let peerCredentials: PeerCredentialsReader
    private(set) var methods: (any MethodTable)?
    private var connections: [UInt64: Connection] = [:]
    private var users: [UInt32: UserLoad] = [:]
    private var nextConnectionID: UInt64 = 1
    private var listening = false
    private var needsFlush: [Connection] = []
    private var flushing: [Connection] = []
    private var needsResume: [Connection] = []
    private var overloadedUsers: [UserLoad] = []
    private var sweepTimer: EventLoop.TimerID?

    /// Called whenever the last connection closes or the first one opens (idle tracking).
    var onConnectionCountChange: ((Int) -> Void)?

    init(
        loop: EventLoop, listener: FileDescriptor, limits: ServerLimits, logger: Logger,
        accept: @escaping Accept = UnixSocket.accept,
        peerCredentials: @escaping PeerCredentialsReader = UnixSocket.peerCredentials
    ) {
        self.loop = loop
        self.listener = listener
        self.limits = limits
        self.logger = logger
        self.accept = accept
        self.peerCredentials = peerCredentials
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        // unowned, not weak: the loop never runs without its server, and a weak reference would
        // give the server a side table, which makes every retain of it on the request path slower.
        loop.onTurnEnd { [unowned self] in self.endTurn() }
    }

    deinit { readBuffer.deallocate() }

    var connectionCount: Int { connections.count }

    /// What one uid holds (nil once it has no connection and nothing in flight).
    func load(of uid: UInt32) -> UserLoad? { users[uid] }

    /// The methods this server runs.
    func serve(_ methods: any MethodTable) { self.methods = methods }

    func startListening() throws(SystemError) {
        try loop.register(listener, events: EpollEvents.readable, handler: self)
        listening = true
    }

    // MARK: accepting

    /// accept(2) failures that a moment's pause may cure: out of descriptors or kernel memory.
    private static let outOfResources: Set<Errno> = [
        .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory,
    ]

    func handleEvents(_ events: UInt32) {
        while listening {
            let accepted: IOResult<FileDescriptor>
            do {
                accepted = try accept(listener)
            } catch {
                if Self.outOfResources.contains(error.errno) {
                    // Out of descriptors: pause accepting briefly instead of spinning on a ready listener.
                    logger.warning("Failed to accept a connection: \(error); pausing for 100 ms")
                    pauseAccepting(milliseconds: 100)
                } else if error.errno != .connectionAbort {
                    logger.warning("Failed to accept a connection: \(error)")
                }
                return
            }
            guard case .done(let fd) = accepted else { return }
            admit(fd)
        }
    }

    /// Whether the listener is in the epoll set (false while paused after EMFILE, or stopping).
    var isListening: Bool { listening }

    private func pauseAccepting(milliseconds: Int64) {
        loop.unregister(listener)
        listening = false
        loop.schedule(afterMilliseconds: milliseconds) { [unowned self] in
            guard !self.isStopping, !self.listening else { return }
            try? self.startListening()
        }
    }

    /// Takes a connected socket as a client connection (after accept; tests hand socketpairs in).
    func admit(_ fd: FileDescriptor) {
        let peer: PeerCredentials
        do {
            peer = try peerCredentials(fd)
        } catch {
            logger.warning("Failed to read peer credentials: \(error)")
            fd.close()
            return
        }
        let user = users[peer.uid] ?? UserLoad(uid: peer.uid)
        if connections.count >= limits.maxConnections {
            refuse(fd, .limitExceeded("connections", limit: limits.maxConnections))
            return
        }
        if user.connections >= limits.maxConnectionsPerUser {
            refuse(fd, .limitExceeded("connections of one user", limit: limits.maxConnectionsPerUser))
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = Connection(id: id, fd: fd, peer: peer, user: user, server: self)
        do {
            try connection.start()
        } catch {
            logger.warning("Failed to watch a new connection: \(error)")
            fd.close()
            return
        }
        connections[id] = connection
        users[peer.uid] = user
        user.connections += 1
        scheduleSweep()
        onConnectionCountChange?(connections.count)
    }

    /// Tells the client why, in one line, then closes.
    private func refuse(_ fd: FileDescriptor, _ error: RPCError) {
        var out = JSONOutput()
        RPCEncoder.writeError(error, id: .null, to: &out)
        out.append(0x0A)
        _ = out.withUnsafeBytes { try? fd.send($0) }
        fd.close()
    }

    func connectionDidClose(_ connection: Connection) {
        connections[connection.id] = nil
        let user = connection.user
        user.connections -= 1
        forgetIfUnused(user)
        onConnectionCountChange?(connections.count)
    }

    /// A uid's accounting goes once it has no connection and nothing in flight.
    func forgetIfUnused(_ user: UserLoad) {
        if user.isUnused && users[user.uid] === user { users[user.uid] = nil }
    }

    // MARK: dispatch

    /// Runs one request with its params; `responder` gets the outcome.
    func dispatch(_ method: Method, _ params: Params, context: CallContext, to responder: Responder) {
        guard let methods else {
            responder.fail(.internalError("the daemon has no methods yet"))
            return
        }
        methods.dispatch(method, params, context: context, to: responder)
    }

    // MARK: turns

    /// The connection has output to send at the end of this turn (or its state changed).
    func needsFlush(_ connection: Connection) {
        guard !connection.flushQueued else { return }
        connection.flushQueued = true
        needsFlush.append(connection)
    }

    /// The connection has buffered requests to run in the next turn.
    func needsResume(_ connection: Connection) {
        guard !connection.resumeQueued else { return }
        connection.resumeQueued = true
        if needsResume.isEmpty { loop.runNextTurn { [unowned self] in self.resumeConnections() } }
        needsResume.append(connection)
    }

    private func resumeConnections() {
        let waiting = needsResume
        needsResume.removeAll()
        for connection in waiting {
            connection.resumeQueued = false
            connection.resume()
        }
    }

    /// Flushes the turn's output: one send per connection, then each settles its epoll interest.
    private func endTurn() {
        while !needsFlush.isEmpty {
            // Swapped with a spare, both keeping their storage: a copy would make the next
            // append allocate, every turn.
            swap(&needsFlush, &flushing)
            for connection in flushing {
                connection.flushQueued = false
                connection.flushAndSettle()
            }
            flushing.removeAll(keepingCapacity: true)
            if !overloadedUsers.isEmpty { trimOverloadedUsers() }
        }
    }

    /// A connection's unsent output changed by `delta`; a user past twice its cap is trimmed at
    /// the end of the turn.
    func outputChanged(_ user: UserLoad, by delta: Int) {
        user.pendingOutput += delta
        if delta > 0 && user.pendingOutput > 2 * limits.maxPendingOutputPerUser
            && !overloadedUsers.contains(where: { $0 === user })
        {
            overloadedUsers.append(user)
        }
    }

    /// Each connection of a user may run a request while it has no unsent output, so many
    /// connections that never read could still pile up answers: past twice the user's cap, the
    /// connections holding the most are dropped until the user is back under it.
    private func trimOverloadedUsers() {
        let users = overloadedUsers
        overloadedUsers.removeAll()
        for user in users where user.pendingOutput > 2 * limits.maxPendingOutputPerUser {
            let holders = connections.values.filter { $0.user === user && $0.unsentByteCount > 0 }
                .sorted { $0.unsentByteCount > $1.unsentByteCount }
            for connection in holders where user.pendingOutput > limits.maxPendingOutputPerUser {
                logger.warning(
                    "Closing a connection of uid \(user.uid): \(connection.unsentByteCount) bytes of answers unread")
                connection.abort()
            }
        }
    }

    // MARK: deadlines

    /// How often connections are checked against the idle and line timeouts: a fraction of the
    /// shorter one, so a deadline is kept to within a quarter of it (and never worse than 1 s).
    var sweepIntervalMilliseconds: Int64 {
        let timeouts = [limits.idleTimeoutMilliseconds, limits.lineTimeoutMilliseconds].filter { $0 > 0 }
        guard let shortest = timeouts.min() else { return 0 }
        return min(max(shortest / 4, 10), 1_000)
    }

    private func scheduleSweep() {
        let interval = sweepIntervalMilliseconds
        guard sweepTimer == nil, interval > 0, !connections.isEmpty else { return }
        sweepTimer = loop.schedule(afterMilliseconds: interval) { [unowned self] in
            self.sweepTimer = nil
            let now = self.loop.clock.nowNanoseconds()
            for connection in Array(self.connections.values) { connection.checkDeadlines(now: now) }
            self.scheduleSweep()
        }
    }

    /// A reloaded configuration's limits: new connections and requests meet them at once, open
    /// connections at their next line (a lower MaxConnections= closes none; a new MaxLineLength=
    /// applies to connections opened from now on, whose framer it sizes).
    func apply(_ limits: ServerLimits) {
        self.limits = limits
        if let timer = sweepTimer {
            loop.cancel(timer)
            sweepTimer = nil
        }
        scheduleSweep()
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

@available(*, unavailable)
extension RPCServer: Sendable {}
