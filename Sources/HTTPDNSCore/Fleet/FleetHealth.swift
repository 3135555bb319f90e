import HTTPDNSProtocol

/// How the fleet's Redis is doing, as this daemon sees it.
public enum FleetCondition: String, Sendable, Equatable {
    /// Not tried yet.
    case connecting
    /// Reads and writes work.
    case connected
    /// Down, refusing connections, or too slow (timeouts).
    case unreachable
    /// It refused the password, or wants one.
    case authenticationFailed = "authentication-failed"
    /// At `maxmemory`: writes are refused (`-OOM`), reads still work.
    case full
}

/// A log line the daemon should write, with its syslog priority.
public struct FleetLogLine: Sendable, Equatable {
    public enum Priority: Sendable, Equatable {
        case error, warning, notice
    }

    public var priority: Priority
    public var message: String

    public init(_ priority: Priority, _ message: String) {
        self.priority = priority
        self.message = message
    }
}

/// What an operation against Redis told about its health.
public enum FleetObservation: Sendable, Equatable {
    /// A read (or a blocking stream read) worked.
    case readSucceeded
    /// A write worked.
    case writeSucceeded
    /// An operation failed; `detail` names the server and the problem (never a secret).
    case failed(FleetCondition, detail: String)
}

/// The fleet's health and counters for `status.fleet`, and the log policy: one line per change
/// of condition, never one per request, so an outage of hours writes two lines (down, back).
///
/// Lives on the event loop; time is passed in (Unix seconds).
public struct FleetHealth: Sendable {
    public private(set) var condition = FleetCondition.connecting
    /// The last failure's detail (kept after recovery, as upstream status does).
    public private(set) var lastError: String?
    /// When the condition last changed (Unix seconds).
    public private(set) var lastStateChange: Int64
    /// Entries that failed to open or validate, since start; never applied.
    public private(set) var rejected = 0
    /// Replication lag in milliseconds, as last measured (0 when the stream is drained).
    public private(set) var lagMilliseconds: Int64?
    private var rejectionLogged = false
    /// When (monotonic milliseconds) the operation that last changed the condition ended.
    private var lastChangeEndedAtMs: Int64?

    public init(nowUnix: Int64) {
        lastStateChange = nowUnix
    }

    /// Feeds one observation; returns the line to log when the condition changed.
    ///
    /// Operations run on two threads (commands, and the change stream), and their results may
    /// reach the loop out of order. With the operation's times (monotonic milliseconds), an
    /// observation the last change already overtook is ignored: a success that ended before the
    /// failure that changed the condition, or a failure that began before the success that
    /// changed it. So a server restart logs one line when it goes and one when it is back.
    public mutating func observe(
        _ observation: FleetObservation, nowUnix: Int64, startedAtMs: Int64? = nil, endedAtMs: Int64? = nil
    ) -> FleetLogLine? {
        if let changed = lastChangeEndedAtMs {
            let isFailure: Bool
            if case .failed = observation { isFailure = true } else { isFailure = false }
            if let time = isFailure ? startedAtMs : endedAtMs, time < changed { return nil }
        }
        let next: FleetCondition
        switch observation {
        case .writeSucceeded:
            next = .connected
        case .readSucceeded:
            // Reads keep working on a full server: only a write says it has room again.
            next = condition == .full ? .full : .connected
        case .failed(let failed, let detail):
            next = failed
            lastError = detail
        }
        guard next != condition else { return nil }
        let previous = condition
        condition = next
        if let endedAtMs { lastChangeEndedAtMs = endedAtMs }
        lastStateChange = nowUnix
        let detail = lastError ?? ""
        switch next {
        case .connecting:
            return nil
        case .connected:
            return previous == .connecting
                ? FleetLogLine(.notice, "fleet: connected to Redis")
                : FleetLogLine(.notice, "fleet: Redis is back (was \(previous.rawValue)); replication resumes")
        case .unreachable:
            return FleetLogLine(
                .warning, "fleet: Redis unreachable: \(detail); serving from local state, retrying with backoff")
        case .authenticationFailed:
            return FleetLogLine(
                .error, "fleet: Redis refused the login: \(detail); serving from local state, retrying with backoff")
        case .full:
            return FleetLogLine(
                .warning,
                "fleet: Redis is full: \(detail); changes wait in the outbox and answers are not shared until it has room"
            )
        }
    }

    /// Counts an entry that failed to open (another fleet key, tampering) or to validate; the
    /// first one is logged, later ones only counted.
    public mutating func entryRejected(_ reason: String, count: Int = 1) -> FleetLogLine? {
        rejected += count
        guard !rejectionLogged else { return nil }
        rejectionLogged = true
        return FleetLogLine(
            .warning,
            "fleet: rejected an entry (\(reason)); a machine may use another fleet key. "
                + "Rejected entries are never applied and are counted in status")
    }

    /// Records the replication lag: how long after its publication (the stream id's time) a
    /// change was applied here; 0 when there is nothing left to read.
    public mutating func noteLag(milliseconds: Int64) {
        lagMilliseconds = max(0, milliseconds)
    }

    /// `status.fleet`, with the outbox length from the store.
    public func status(outbox: Int) -> FleetStatus {
        FleetStatus(
            connected: condition == .connected || condition == .full, condition: condition, lastError: lastError,
            lastStateChange: lastStateChange, lagSeconds: lagMilliseconds.map { Double($0) / 1_000 }, outbox: outbox,
            rejected: rejected)
    }
}

/// The `fleet` member of the `status` result.
public struct FleetStatus: Sendable, Equatable {
    /// Redis answers (reads work; when `condition` is `full`, writes do not).
    public var connected: Bool
    public var condition: FleetCondition
    public var lastError: String?
    /// Unix seconds of the last change of `condition`.
    public var lastStateChange: Int64
    /// Seconds between a change's publication and its application here, as last measured.
    public var lagSeconds: Double?
    /// Local changes not yet published.
    public var outbox: Int
    /// Entries that failed to open or validate.
    public var rejected: Int

    public init(
        connected: Bool, condition: FleetCondition, lastError: String?, lastStateChange: Int64, lagSeconds: Double?,
        outbox: Int, rejected: Int
    ) {
        self.connected = connected
        self.condition = condition
        self.lastError = lastError
        self.lastStateChange = lastStateChange
        self.lagSeconds = lagSeconds
        self.outbox = outbox
        self.rejected = rejected
    }

    /// The `fleet` member of the `status` result: times in Unix seconds, durations in
    /// seconds, as everywhere in the API.
    public var member: StatusResult.Fleet {
        StatusResult.Fleet(
            connected: connected, state: condition.rawValue, lastError: lastError, lastStateChange: lastStateChange,
            lag: lagSeconds, outbox: outbox, rejected: rejected)
    }
}
