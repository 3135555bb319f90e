import Glibc
import HTTPDNSCore
import HTTPDNSSystem
import Synchronization

/// The daemon's log lines, on stderr in the form their reader expects: with `<N>` syslog
/// priority prefixes when stderr is the journal (sd-daemon(3)), otherwise with a timestamp and a
/// level word. Secrets never reach a log line: callers log upstream names and error codes, never
/// keys or cookie values. Lines are rate-limited per cause (`LogRateLimiter`): a cause is the
/// call site unless named.
public struct Logger: Sendable {
    /// syslog's priorities, which `LogLevel=` and `--log-level` name.
    public typealias Priority = LogPriority

    public typealias Sink = @Sendable (Priority, String) -> Void

    /// The most verbose priority logged; a reload may change it, from the loop thread, while other
    /// threads log.
    private let level: LogLevel
    private let sink: Sink
    /// nil: every line is written.
    private let rateLimiter: LogRateLimiter?

    public init(
        threshold: Priority = .info, rateLimiter: LogRateLimiter? = LogRateLimiter(),
        sink: @escaping Sink = Logger.standardError()
    ) {
        self.level = LogLevel(threshold)
        self.rateLimiter = rateLimiter
        self.sink = sink
    }

    public var threshold: Priority { level.value }

    /// Sets the most verbose priority logged from now on (`LogLevel=` after the configuration is read).
    public func setThreshold(_ threshold: Priority) { level.value = threshold }

    /// Writes `message` unless its cause (`cause`, else the call site) already had its lines
    /// this interval; the next line written of that cause counts the ones left out.
    public func log(
        _ priority: Priority, _ message: @autoclosure () -> String, cause: String? = nil,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        guard priority <= level.value else { return }
        guard let rateLimiter else { return sink(priority, message()) }
        switch rateLimiter.admit(cause ?? "\(file):\(line)") {
        case .suppress:
            return
        case .write(let suppressed) where suppressed > 0:
            sink(priority, message() + " (\(suppressed) more like it suppressed)")
        case .write:
            sink(priority, message())
        }
    }

    public func error(
        _ message: @autoclosure () -> String, cause: String? = nil, file: StaticString = #fileID, line: UInt = #line
    ) {
        log(.error, message(), cause: cause, file: file, line: line)
    }
    public func warning(
        _ message: @autoclosure () -> String, cause: String? = nil, file: StaticString = #fileID, line: UInt = #line
    ) {
        log(.warning, message(), cause: cause, file: file, line: line)
    }
    public func notice(
        _ message: @autoclosure () -> String, cause: String? = nil, file: StaticString = #fileID, line: UInt = #line
    ) {
        log(.notice, message(), cause: cause, file: file, line: line)
    }
    public func info(
        _ message: @autoclosure () -> String, cause: String? = nil, file: StaticString = #fileID, line: UInt = #line
    ) {
        log(.info, message(), cause: cause, file: file, line: line)
    }
    public func debug(
        _ message: @autoclosure () -> String, cause: String? = nil, file: StaticString = #fileID, line: UInt = #line
    ) {
        log(.debug, message(), cause: cause, file: file, line: line)
    }

    /// Writes to stderr, one `write(2)` per line so lines from several threads never interleave,
    /// in the format `LogFormat.current` chose for where stderr goes.
    public static func standardError(format: LogFormat = .current) -> Sink {
        { priority, message in
            let line = format.line(priority, message.replacingNewlines()) + "\n"
            try? FileDescriptor.standardError.writeAll(Array(line.utf8))
        }
    }
}

/// How a log line looks where it goes.
public enum LogFormat: Sendable, Equatable {
    /// `<4>message`: journald reads the priority from the prefix and stamps the time itself.
    case journal
    /// `2026-12-01T22:52:13.123Z warning: message`: a terminal or a file has neither.
    case plain

    /// journald's stream when `JOURNAL_STREAM` names stderr's device and inode (systemd.exec(5)),
    /// plain otherwise.
    public static var current: LogFormat {
        guard let stream = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return .plain }
        var status = stat()
        guard fstat(2, &status) == 0 else { return .plain }
        return stream == "\(status.st_dev):\(status.st_ino)" ? .journal : .plain
    }

    func line(_ priority: Logger.Priority, _ message: String) -> String {
        switch self {
        case .journal: "<\(priority.rawValue)>" + message
        case .plain: Self.timestamp(milliseconds: WallClock.nowMilliseconds()) + " \(priority.name): " + message
        }
    }

    /// RFC 3339 in UTC with milliseconds (log timestamps are presentation, not daemon time).
    static func timestamp(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let ms = Int(milliseconds % 1000)
        let fraction = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}

/// The logging threshold, shared by the loggers of every thread.
private final class LogLevel: Sendable {
    private let raw: Atomic<Int>

    init(_ priority: Logger.Priority) { raw = Atomic(priority.rawValue) }

    var value: Logger.Priority {
        get { Logger.Priority(rawValue: raw.load(ordering: .relaxed)) ?? .info }
        set { raw.store(newValue.rawValue, ordering: .relaxed) }
    }
}

extension String {
    /// A log message is one line: embedded newlines would forge journal entries.
    fileprivate func replacingNewlines() -> String {
        guard contains(where: { $0 == "\n" || $0 == "\r" }) else { return self }
        return String(map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
