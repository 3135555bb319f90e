import HTTPDNSSystem

/// Log lines for journald: `<N>` syslog priority prefixes on stderr (sd-daemon(3)).
/// Secrets never reach a log line: callers log upstream names and error codes, never keys or cookie values.
/// Lines are rate-limited per cause (`LogRateLimiter`): a cause is the call site unless named.
public struct Logger: Sendable {
    public enum Priority: Int, Sendable, Comparable {
        case error = 3
        case warning = 4
        case notice = 5
        case info = 6
        case debug = 7

        public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    public typealias Sink = @Sendable (Priority, String) -> Void

    public let threshold: Priority
    private let sink: Sink
    /// nil: every line is written.
    private let rateLimiter: LogRateLimiter?

    public init(
        threshold: Priority = .info, rateLimiter: LogRateLimiter? = LogRateLimiter(),
        sink: @escaping Sink = Logger.standardError
    ) {
        self.threshold = threshold
        self.rateLimiter = rateLimiter
        self.sink = sink
    }

    /// Writes `message` unless its cause (`cause`, else the call site) already had its lines
    /// this interval; the next line written of that cause counts the ones left out.
    public func log(
        _ priority: Priority, _ message: @autoclosure () -> String, cause: String? = nil,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        guard priority <= threshold else { return }
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

    /// One `write(2)` per line, so lines from several threads never interleave.
    public static let standardError: Sink = { priority, message in
        let line = "<\(priority.rawValue)>" + message.replacingNewlines() + "\n"
        try? FileDescriptor.standardError.writeAll(Array(line.utf8))
    }
}

extension String {
    /// A log message is one line: embedded newlines would forge journal entries.
    fileprivate func replacingNewlines() -> String {
        guard contains(where: { $0 == "\n" || $0 == "\r" }) else { return self }
        return String(map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
