/// A configuration value that cannot be used: the daemon refuses to start with it.
///
/// `description` reads like a compiler diagnostic, for example
/// `/etc/httpdnsd/httpdnsd.conf:7: Timeout=: invalid time span "2 parsecs"`. The message never
/// contains the value of `SecretKey=`.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem; a struct so that new kinds can be added.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A value that does not parse or is out of range for its key.
        public static let invalidValue = Code(rawValue: "invalid-value")
        /// Two settings that contradict each other (for example `MinTTL=` above `MaxTTL=`).
        public static let conflict = Code(rawValue: "conflict")
        /// A line that is not a comment, a section header or an assignment the parser can read.
        public static let syntax = Code(rawValue: "syntax")
        /// A section the daemon does not know.
        public static let unknownSection = Code(rawValue: "unknown-section")
        /// A key its section does not have.
        public static let unknownKey = Code(rawValue: "unknown-key")
    }

    public var code: Code
    /// The file, as given to the parser.
    public var path: String
    /// 1-based line of the assignment (its first line when continued).
    public var line: Int
    /// The key without `=`, nil for a line that has no key (a bad section header).
    public var key: String?
    public var message: String

    public init(code: Code = .invalidValue, path: String, line: Int, key: String?, message: String) {
        self.code = code
        self.path = path
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        if let key { return "\(path):\(line): \(key)=: \(message)" }
        return "\(path):\(line): \(message)"
    }
}

/// Every problem of one configuration file, in file order (never empty): the daemon refuses to
/// start, and `--check-config` prints them all, one per line.
public struct ConfigProblems: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(_ errors: [ConfigError]) {
        precondition(!errors.isEmpty, "ConfigProblems holds at least one error")
        self.errors = errors
    }

    /// The first problem, for callers that show one.
    public var first: ConfigError { errors[0] }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// Something in the configuration that is allowed but probably not meant (both `SecretKey=` and
/// `SecretKeyFile=`, a fleet that shares nothing): logged, and the daemon starts.
public struct ConfigWarning: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int
    public var message: String

    public init(path: String, line: Int, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    public var description: String { "\(path):\(line): \(message)" }
}
