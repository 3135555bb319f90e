/// syslog's priorities (syslog(3)), which `LogLevel=` and `httpdnsd --log-level` name.
public enum LogPriority: Int, Sendable, Comparable, CaseIterable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    public static func < (a: LogPriority, b: LogPriority) -> Bool { a.rawValue < b.rawValue }

    /// The level's word, as `LogLevel=` takes it and a plain log line shows it.
    public var name: String {
        switch self {
        case .error: "error"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// A level by name (also syslog's short forms `err` and `warn`) or number (3 to 7).
    public init?(name: String) {
        switch name.lowercased() {
        case "err", "3": self = .error
        case "warn", "4": self = .warning
        case "5": self = .notice
        case "6": self = .info
        case "7": self = .debug
        case let word:
            guard let match = LogPriority.allCases.first(where: { $0.name == word }) else { return nil }
            self = match
        }
    }
}
