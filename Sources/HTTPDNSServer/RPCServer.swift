import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// Bounds that protect the daemon from its clients (sd-varlink's defaults, scaled to this job).
/// httpdnsd.conf(5) documents the fixed ones and the worst case they add up to.
public struct ServerLimits: Sendable, Equatable {
    /// Longest request line; longer gets -32600 and the connection closes (1 MiB by default: httpdnsd-rpc(7), FRAMING).
    public var maxLineLength = 1 << 20
    public var maxConnections = 4096
    /// One user cannot take every connection (sd-varlink: 1024 per uid).
    public var maxConnectionsPerUser = 1024
    /// Connections each account may open past `maxConnections`: however many others hold the
    /// total, a user that connects still gets these (and so the NSS module its lookups).
    public var reservedConnectionsPerUser = 16
    /// Unanswered requests (notifications included) on one connection; -32003 beyond.
    public var maxRequestsInFlight = 1024
    /// Unanswered requests of one uid across its connections; -32003 beyond.
    public var maxRequestsInFlightPerUser = 4096
    public var maxBatch = 1024
    /// A connection with nothing in flight that moves no byte for this long is closed (0: never).
    public var idleTimeoutMilliseconds: Int64 = 300_000
    /// A connection holding an unfinished line for this long is closed (0: never).
    public var lineTimeoutMilliseconds: Int64 = 10_000
    /// Work one connection may do per loop turn, in units of one small request (`WorkCost`):
    /// a line, a batch element, a notification and a piece of a streamed answer all cost.
    public var workPerTurn = 64
    /// The same across every connection of one uid, so that a thousand connections get no more
    /// of a turn than a few.
    public var workPerTurnPerUser = 512
    /// A connection stops running requests while this much of its output waits for the client
    /// (checked before each request, so one answer may go past it).
    public var maxPendingOutput = 512 << 10
    /// The same across all connections of one uid.
    public var maxPendingOutputPerUser = 4 << 20
    /// Memory one uid may hold (see `memoryBoundPerUser`).
    public var memoryPerUser = 64 << 20
    /// Connections accepted in one loop turn; the rest wait in the listen backlog for the next.
    public var acceptsPerTurn = 32

    public init() {}

    /// Memory the connections of one uid may hold, counted by capacity: input buffers, output,
    /// answers waiting, snapshots being streamed, requests in flight. Past it they stop reading
    /// and running requests until some is released; never less than four maximal lines.
    public var memoryBoundPerUser: Int { max(memoryPerUser, 4 * maxLineLength) }
    /// The same across all users: four users' worth. Past it, the uids holding more than an
    /// equal share stop.
    public var memoryBound: Int { 4 * memoryBoundPerUser }
}

/// What one unit of `ServerLimits.workPerTurn` is worth, and what each kind of work costs in
/// units: estimates of loop-thread time in multiples of one small request (about 12,000
/// instructions).
enum WorkCost {
    /// Accepting a connection: reading its credentials, registering it, and later its close.
    static let admission = 2
    /// A line: parsing it costs with its length.
    static func line(bytes: Int) -> Int { 1 + bytes / 1024 }
    /// A read: copying and scanning for line ends (blank lines included, which no line charges).
    static func read(bytes: Int) -> Int { 1 + bytes / 8192 }
    /// A piece of a streamed answer: escaping and copying about 8 KiB costs a request.
    static func written(bytes: Int) -> Int { 1 + bytes / 8192 }
    /// An answer written whole, beyond the request it answers: building and escaping a large
    /// one (a header of 180 cookies of 4 KiB: 720 KB, about a millisecond) costs a request per
    /// 2 KiB.
    static func answer(bytes: Int) -> Int { bytes / 2048 }
    /// Cookies stored by one `handleSetCookie`, beyond its first: each is parsed, stored,
    /// recorded for the commit and answered for (about two small requests).
    static func cookiesStored(_ count: Int) -> Int { 2 * max(count - 1, 0) }
}

/// A share of work per loop turn; a costly step may overdraw it, and the debt is paid off in
/// the turns after (each turn adds a share, up to one).
struct WorkCredit {
    private var balance = 0
    private var turn: UInt64 = 0

    /// Whether there is credit left in `turn`.
    mutating func isAvailable(turn: UInt64, perTurn: Int) -> Bool {
        refill(turn: turn, perTurn: perTurn)
        return balance > 0
    }

    mutating func charge(_ units: Int, turn: UInt64, perTurn: Int) {
        refill(turn: turn, perTurn: perTurn)
        balance -= units
    }

    private mutating func refill(turn: UInt64, perTurn: Int) {
        guard turn != self.turn else { return }
        let elapsed = Int(clamping: min(turn &- self.turn, 1 << 20))
        balance = min(perTurn, balance + perTurn * elapsed)
        self.turn = turn
    }
}

/// What one uid holds across its connections, for the per-user caps: the uid of an account,
/// whose subordinate uids' connections count as its own (`RPCServer.accountOf`).
final class UserLoad {
    let uid: UInt32
    var connections = 0
    var inFlight = 0
    /// Answer bytes waiting for its clients to read them.
    var unsentOutput = 0
    /// Memory its connections hold, by capacity (`ServerLimits.memoryBoundPerUser`).
    var memory = 0
    /// Its share of the current turn's work.
    var credit = WorkCredit()
    /// The one connection (by id) that may go on reading and running past the memory bound to
    /// finish the line it holds: memory held by unfinished lines is only released by finishing
    /// them, so without it connections that each hold half a line would wait for each other.
    var finishingLine: UInt64?

    init(uid: UInt32) { self.uid = uid }

    var isUnused: Bool { connections == 0 && inFlight == 0 }
}

/// Accepts connections on the listening socket and routes their requests to the method table.
///
/// Output is batched per loop turn: responses produced during a turn are appended to their
/// connection's output and sent at the end of the turn, one `send` per connection. When a turn
/// finds one connection ready and its last line received is answered, that answer leaves at
/// once, before the rest of the request's work and the turn's (`Connection.answersAtOnce`).
///
/// Every connection charges its uid's account (`UserLoad`): the work it does in a turn, the
/// memory it holds and the answers its client has not read; past the bounds it waits, and past
/// twice the unread-answer bound the connections holding the most are closed.
final class RPCServer: EventHandler {
    typealias Accept = (FileDescriptor) throws(SystemError) -> IOResult<FileDescriptor>
    typealias PeerCredentialsReader = (FileDescriptor) throws(SystemError) -> PeerCredentials

    let loop: EventLoop
    private(set) var limits: ServerLimits
    private(set) var isStopping = false
    let readBuffer: UnsafeMutableRawBufferPointer
    /// The request path's decoder, shared by the connections of this (single) loop thread.
    var scanner = RequestScanner()
    /// Memory all connections hold (see `UserLoad.memory`).
    private(set) var memory = 0
    /// Counts loop turns: work credit is per turn.
    private(set) var turn: UInt64 = 1
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
    private var users: [UInt32: UserLoad] = [:]
    private var nextConnectionID: UInt64 = 1
    private var listening = false
    private var needsFlush: [Connection] = []
    private var flushing: [Connection] = []
    private var needsResume: [Connection] = []
    private var overloadedUsers: [UserLoad] = []
    /// Connections stopped because their uid (or everyone) holds too much memory.
    private var memoryWaiters: [Connection] = []
    /// Memory was released this turn: the waiters are looked at when it ends.
    private var memoryReleased = false
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
        self.limits = limits
        self.logger = logger
        self.accept = accept
        self.peerCredentials = peerCredentials
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        slices = SlicedWork(loop: loop, perTurn: limits.workPerTurnPerUser)
        // unowned, not weak: the loop never runs without its server, and a weak reference would
        // give the server a side table, which makes every retain of it on the request path slower.
        loop.onTurnEnd { [unowned self] in self.endTurn() }
        slices.account = { [unowned self] uid in self.users[uid] ?? UserLoad(uid: uid) }
        slices.turn = { [unowned self] in self.turn }
    }

    deinit { readBuffer.deallocate() }

    var connectionCount: Int { connections.count }

    /// Users (uids) with a connection or a request in flight, for `metrics`.
    var userCount: Int { users.count }

    /// What one uid holds (nil once it has no connection and nothing in flight).
    func load(of uid: UInt32) -> UserLoad? { users[uid] }

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
        for _ in 0..<limits.acceptsPerTurn {
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
        let account = accountOf(peer.uid)
        let user = users[account] ?? UserLoad(uid: account)
        // Admitting (or refusing) is work the peer's uid caused: it spends that uid's share of
        // the turn, so its own connections run less while it storms.
        user.credit.charge(WorkCost.admission, turn: turn, perTurn: limits.workPerTurnPerUser)
        if connections.count >= limits.maxConnections
            && user.connections >= min(limits.reservedConnectionsPerUser, limits.maxConnectionsPerUser)
        {
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
        users[account] = user
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
        if memoryReleased { wakeMemoryWaiters() }
        turn += 1
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
            if !overloadedUsers.isEmpty { trimOverloadedUsers() }
        }
    }

    // MARK: accounts

    /// Whether a connection of `user` must leave memory to others before it reads or runs more:
    /// its uid is at its bound, or everyone's memory is at the total bound and its uid holds at
    /// least an equal share of it.
    func isOverMemory(_ user: UserLoad) -> Bool {
        user.memory >= limits.memoryBoundPerUser
            || (memory >= limits.memoryBound && user.memory * max(users.count, 1) >= memory)
    }

    /// A connection's memory and unsent output changed by these amounts.
    func charge(_ user: UserLoad, memory delta: Int, unsentOutput unsentDelta: Int) {
        user.memory += delta
        memory += delta
        if delta < 0 && !memoryWaiters.isEmpty { memoryReleased = true }
        guard unsentDelta != 0 else { return }
        user.unsentOutput += unsentDelta
        if unsentDelta > 0 && user.unsentOutput > 2 * limits.maxPendingOutputPerUser
            && !overloadedUsers.contains(where: { $0 === user })
        {
            overloadedUsers.append(user)
        }
    }

    /// Memory may have become available to waiters without a byte being freed (the connection
    /// finishing its line let go of that right): they are looked at at the end of the turn.
    func memoryMayBeAvailable() {
        if !memoryWaiters.isEmpty { memoryReleased = true }
    }

    /// The connection waits until memory is released (`isOverMemory` of its uid is false).
    func waitForMemory(_ connection: Connection) {
        guard !connection.queued.contains(.memory) else { return }
        connection.queued.insert(.memory)
        memoryWaiters.append(connection)
    }

    private func wakeMemoryWaiters() {
        memoryReleased = false
        let waiting = memoryWaiters
        memoryWaiters.removeAll()
        for connection in waiting {
            connection.queued.remove(.memory)
            if isOverMemory(connection.user) && !connection.mayFinishItsLine {
                waitForMemory(connection)
            } else {
                needsResume(connection)
            }
        }
    }

    /// Each connection of a user may run a request while it has no unsent output, so many
    /// connections that never read could still pile up answers: past twice the user's cap, the
    /// connections holding the most are dropped until the user is back under it.
    private func trimOverloadedUsers() {
        let users = overloadedUsers
        overloadedUsers.removeAll()
        for user in users where user.unsentOutput > 2 * limits.maxPendingOutputPerUser {
            let holders = connections.values.filter { $0.user === user && $0.unsentByteCount > 0 }
                .sorted { $0.unsentByteCount > $1.unsentByteCount }
            var closed = 0
            for connection in holders where user.unsentOutput > limits.maxPendingOutputPerUser {
                closed += 1
                connection.disconnect()
            }
            logger.warning("Closed \(closed) connection(s) of uid \(user.uid) holding the most answers unread")
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
