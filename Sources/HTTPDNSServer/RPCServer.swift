import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// Accepts connections on the listening socket and routes their requests to the method table.
///
/// Output is batched per loop turn: responses produced during a turn are appended to their
/// connection's output and sent at the end of the turn, one `send` per connection. When a turn
/// finds one connection ready and its last line received is answered, that answer leaves at
/// once, before the rest of the request's work and the turn's (`Connection.answersAtOnce`).
///
/// Every connection charges its uid's account: the work it does in a turn, the memory it holds
/// and the answers its client has not read; `admission` decides who connects, runs, waits or is
/// refused, and this class and `Connection` do what it says.
final class RPCServer: EventHandler {
    typealias Accept = (FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor>
    typealias PeerCredentialsReader = (FileDescriptor) throws(SystemError) -> PeerCredentials

    let loop: EventLoop
    /// The bounds, and what each connection and account holds against them.
    var admission: Admission
    var limits: ServerLimits { admission.limits }
    private(set) var isStopping = false
    let readBuffer: UnsafeMutableRawBufferPointer
    /// The request path's decoder, shared by the connections of this (single) loop thread.
    var scanner = RequestScanner()
    /// Memory all connections hold (see `UserLoad.memory`).
    var memory: Int { admission.memory }
    /// Counts loop turns: work credit is per turn.
    var turn: UInt64 { admission.turn }
    /// Long work run a slice per turn (`importCookies`).
    let slices: SlicedWork
    /// Requests answered, by method and outcome (`metrics`).
    var requestCounts = RequestCounts()

    private let listener: FileDescriptor
    private let logger: Logger
    private let accept: Accept
    private let peerCredentials: PeerCredentialsReader
    private(set) var methods: MethodTable?
    private var connections: [UInt64: Connection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var listening = false
    private var needsFlush: [Connection] = []
    private var flushing: [Connection] = []
    private var needsResume: [Connection] = []
    private var sweepTimer: EventLoop.TimerID?

    /// The uid a peer uid's bounds are charged to (the owner of a subordinate uid).
    var accountOf: (UInt32) -> UInt32 = { $0 }
    /// Called whenever the last connection closes or the first one opens (idle tracking).
    var onConnectionCountChange: ((Int) -> Void)?
    /// Called once, at the end of the first turn that sent output: work that would compete with
    /// the first answer waits for it.
    var afterFirstAnswer: (() -> Void)?

    init(
        loop: EventLoop, listener: FileDescriptor, limits: ServerLimits, logger: Logger,
        accept: @escaping Accept = UnixSocket.accept,
        peerCredentials: @escaping PeerCredentialsReader = UnixSocket.peerCredentials
    ) {
        self.loop = loop
        self.listener = listener
        self.admission = Admission(limits: limits)
        self.logger = logger
        self.accept = accept
        self.peerCredentials = peerCredentials
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        slices = SlicedWork(loop: loop)
        // unowned, not weak: the loop never runs without its server, and a weak reference would
        // give the server a side table, which makes every retain of it on the request path slower.
        loop.onTurnEnd { [unowned self] in self.endTurn() }
        slices.mayRun = { [unowned self] uid in self.admission.sliceMayRun(account: uid) }
        slices.charge = { [unowned self] uid, units in self.admission.chargeSlice(account: uid, units: units) }
    }

    deinit { readBuffer.deallocate() }

    var connectionCount: Int { connections.count }

    /// Users (accounts) with a connection or a request in flight, for `metrics`.
    var userCount: Int { admission.accountCount }

    /// What one account holds (nil once it has no connection and nothing in flight).
    func load(of uid: UInt32) -> UserLoad? { admission.load(of: uid) }

    /// The methods this server runs.
    func serve(_ methods: MethodTable) { self.methods = methods }

    func startListening() throws(SystemError) {
        try loop.register(listener, events: EpollEvents.readable, handler: self)
        listening = true
    }

    // MARK: accepting

    /// accept(2) failures that a moment's pause may cure: out of descriptors or kernel memory.
    private static let outOfResources: Set<Errno> = [
        .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory,
    ]

    /// Accepts at most `acceptsPerTurn` connections, then lets the turn go on: the listener is
    /// level-triggered, so the next turn takes the rest, and a peer that refills the backlog as
    /// fast as it is drained (connect and close in a loop) cannot keep the loop here.
    func handleEvents(_ events: UInt32) {
        while admission.mayAccept() {
            guard listening else { return }
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
        let user: UserLoad
        switch admission.arrives(account: accountOf(peer.uid)) {
        case .admit(let admitted): user = admitted
        case .refuse(let error): return refuse(fd, error)
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = Connection(fd: fd, peer: peer, budget: admission.opened(id: id, user: user), server: self)
        do {
            try connection.start()
        } catch {
            logger.warning("Failed to watch a new connection: \(error)")
            connection.abandon()
            return
        }
        connections[id] = connection
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
        onConnectionCountChange?(connections.count)
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

    /// What running `method` costs beyond its line, in work units (it grows with the caller's
    /// jar or the cache for the methods that walk them).
    func workUnits(of method: Method, context: CallContext) -> Int {
        methods?.workUnits(of: method, context: context) ?? 0
    }

    // MARK: turns

    /// The connection has output to send at the end of this turn (or its state changed).
    func needsFlush(_ connection: Connection) {
        guard !connection.queued.contains(.flush) else { return }
        connection.queued.insert(.flush)
        needsFlush.append(connection)
    }

    /// The connection has work left for the next turn (lines, a batch, answers to write).
    func needsResume(_ connection: Connection) {
        guard !connection.queued.contains(.resume) else { return }
        connection.queued.insert(.resume)
        if needsResume.isEmpty { loop.runNextTurn { [unowned self] in self.resumeConnections() } }
        needsResume.append(connection)
    }

    private func resumeConnections() {
        let waiting = needsResume
        needsResume.removeAll()
        for connection in waiting {
            connection.queued.remove(.resume)
            connection.resume()
        }
    }

    /// The end of a turn: its output goes out, then what waited for the first answer runs.
    private func endTurn() {
        let sent = !needsFlush.isEmpty
        flushTurn()
        if sent, let work = afterFirstAnswer {
            afterFirstAnswer = nil
            work()
        }
        wakeMemoryWaiters()
        admission.turnEnded()
    }

    /// Flushes the turn's output: one send per connection, then each settles its epoll interest.
    private func flushTurn() {
        while !needsFlush.isEmpty {
            // Swapped with a spare, both keeping their storage: a copy would make the next
            // append allocate, every turn.
            swap(&needsFlush, &flushing)
            for connection in flushing {
                connection.queued.remove(.flush)
                connection.flushAndSettle()
            }
            flushing.removeAll(keepingCapacity: true)
            trimOverloadedUsers()
        }
    }

    // MARK: accounts

    /// Whether a connection of `user` must leave memory to others before it reads or runs more.
    func isOverMemory(_ user: UserLoad) -> Bool { admission.isOverMemory(user) }

    /// The connections that waited for memory, at the end of a turn that released some: those
    /// that may go on run next turn, the others wait again.
    private func wakeMemoryWaiters() {
        for id in admission.memoryWaitersToWake() {
            guard let connection = connections[id] else { continue }
            if connection.memoryWaitEnds() { needsResume(connection) }
        }
    }

    /// Each connection of a user may run a request while it has no unsent output, so many
    /// connections that never read could still pile up answers: past twice the user's cap, the
    /// connections holding the most are dropped until the user is back under it.
    private func trimOverloadedUsers() {
        for user in admission.accountsToShed() {
            let holders = connections.values.filter { $0.user === user && $0.unsentByteCount > 0 }
                .sorted { $0.unsentByteCount > $1.unsentByteCount }
            var closed = 0
            for connection in holders where admission.mustShed(user) {
                closed += 1
                connection.disconnect()
            }
            logger.warning("Closed \(closed) connection(s) of uid \(user.uid) holding the most answers unread")
        }
    }

    // MARK: deadlines

    /// How often connections are checked against the idle and line timeouts.
    var sweepIntervalMilliseconds: Int64 { admission.sweepIntervalMilliseconds }

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
        admission.apply(limits)
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
        for connection in Array(connections.values) { connection.disconnect() }
    }
}

@available(*, unavailable)
extension RPCServer: Sendable {}

/// Requests answered since start, by method and outcome: successes in an array (the request
/// path), failures by error code (rare).
struct RequestCounts {
    private(set) var succeeded = [Int](repeating: 0, count: Method.allCases.count)
    /// Keyed by method (nil: a method the daemon does not have), then error code.
    private(set) var failed: [Method?: [Int: Int]] = [:]

    mutating func succeeded(_ method: Method) { succeeded[method.ordinal] += 1 }

    mutating func failed(_ method: Method?, code: Int) { failed[method, default: [:]][code, default: 0] += 1 }
}
