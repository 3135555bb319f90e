import HTTPDNSSystem

/// Log lines for journald: `<N>` syslog priority prefixes on stderr (sd-daemon(3)).
/// Secrets never reach a log line: callers log upstream names and error codes, never keys or cookie values.
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

    public init(threshold: Priority = .info, sink: @escaping Sink = Logger.standardError) {
        self.threshold = threshold
        self.sink = sink
    }

    public func log(_ priority: Priority, _ message: @autoclosure () -> String) {
        guard priority <= threshold else { return }
        sink(priority, message())
    }

    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }

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
