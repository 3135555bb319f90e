/// Bounds that protect the daemon from its clients (sd-varlink's defaults, scaled to this job).
/// httpdnsd.conf(5) documents the fixed ones and the worst case they add up to; `Admission`
/// applies them.
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
