/// `[Fleet]`: several machines share the DNS cache and chosen users' cookie jars through Redis,
/// everything sealed with the fleet key. Absent (nil in `DaemonConfiguration.fleet`) unless the
/// file has a `[Fleet]` section.
public struct FleetConfiguration: Sendable, Equatable {
    /// `Redis=`: where the fleet's Redis listens.
    public var redis: FleetRedisAddress
    /// `PasswordFile=`: the Redis password (`AUTH`), read at start; never logged.
    public var passwordFile: String?
    /// `Name=`: the fleet's namespace; one Redis may serve several fleets. Every key of the
    /// fleet carries `{NAME}` as its Redis Cluster hash tag, so the fleet lives on one shard.
    public var name: String
    /// `KeyFile=`: the fleet key, 64 hexadecimal characters (`openssl rand -hex 32`).
    public var keyFile: String
    /// `ShareCache=`: answer local cache misses from the fleet and publish upstream answers to
    /// it. Default yes: sharing the cache is the first reason to form a fleet.
    public var shareCache: Bool
    /// `ShareCookiesOf=`: the local users whose jar is replicated across the fleet (each with
    /// the same user on the other machines); every other jar stays local. Default: none.
    public var shareCookiesOf: [FleetUser]

    public init(
        redis: FleetRedisAddress, passwordFile: String? = nil, name: String, keyFile: String,
        shareCache: Bool = true, shareCookiesOf: [FleetUser] = []
    ) {
        self.redis = redis
        self.passwordFile = passwordFile
        self.name = name
        self.keyFile = keyFile
        self.shareCache = shareCache
        self.shareCookiesOf = shareCookiesOf
    }

    /// The longest `Name=`, so every key stays short.
    public static let maximumNameLength = 64
}

/// Where the fleet's Redis listens (`Redis=`).
public enum FleetRedisAddress: Sendable, Equatable, CustomStringConvertible {
    /// `redis://HOST[:PORT][/DB]`: a host name, IPv4 address or bracketed IPv6 address
    /// (stored without brackets), port 6379 unless given, database 0 unless given.
    case tcp(host: String, port: Int, database: Int)
    /// `unix:PATH`: a Unix socket (database 0).
    case unix(path: String)

    /// Redis's default port.
    public static let defaultPort = 6379

    /// The setting as it would be written (there is never a password in it).
    public var description: String {
        switch self {
        case .tcp(let host, let port, let database):
            let authority = host.contains(":") ? "[\(host)]" : host
            return "redis://\(authority):\(port)/\(database)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// Parses a `Redis=` value; the error is a sentence for the diagnostic. A value with user
    /// information is refused without repeating it: it may hold a password.
    public static func parse(_ value: String) -> Result<FleetRedisAddress, FleetSettingProblem> {
        guard !ConfigSyntax.hasWhitespaceOrControl(value) else {
            return .failure(FleetSettingProblem("address contains whitespace or control characters"))
        }
        if value.hasPrefix("unix:") {
            let path = String(value.dropFirst("unix:".count))
            guard path.utf8.first == UInt8(ascii: "/") else {
                return .failure(FleetSettingProblem("unix: needs an absolute path"))
            }
            guard path.utf8.count <= 107 else {
                return .failure(FleetSettingProblem("socket path is longer than 107 bytes"))
            }
            return .success(.unix(path: path))
        }
        let lowered = value.lowercased()
        if lowered.hasPrefix("rediss://") {
            return .failure(
                FleetSettingProblem("rediss:// (TLS) is not supported; fleet values are sealed, use redis://"))
        }
        guard lowered.hasPrefix("redis://") else {
            return .failure(FleetSettingProblem("expected redis://HOST[:PORT][/DB] or unix:PATH, not \"\(value)\""))
        }
        let rest = value.dropFirst("redis://".count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else {
            return .failure(FleetSettingProblem("the address must not contain a user or password; use PasswordFile="))
        }
        let tail = rest[authorityEnd...]
        guard !tail.contains("?"), !tail.contains("#") else {
            return .failure(FleetSettingProblem("options after the address are not supported: \"\(value)\""))
        }
        var database = 0
        if !tail.isEmpty {
            let digits = tail.dropFirst()
            if !digits.isEmpty {
                guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(digits), number <= 1_000_000
                else { return .failure(FleetSettingProblem("invalid database number \"\(digits)\"")) }
                database = number
            }
        }
        var host = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                return .failure(FleetSettingProblem("unclosed IPv6 literal in \"\(value)\""))
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard ConfigSyntax.isIPv6(String(host)) else {
                return .failure(FleetSettingProblem("invalid IPv6 literal in \"\(value)\""))
            }
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .failure(FleetSettingProblem("invalid address \"\(value)\"")) }
                portText = after.dropFirst()
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            }
            guard ConfigSyntax.isServerHost(host) else {
                return .failure(FleetSettingProblem("invalid host in \"\(value)\""))
            }
        }
        var port = defaultPort
        if let portText {
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(portText),
                (1...65_535).contains(number)
            else { return .failure(FleetSettingProblem("invalid port in \"\(value)\"")) }
            port = number
        }
        let canonicalHost =
            ConfigSyntax.isIPv6(String(host))
            ? host.lowercased() : (ConfigSyntax.hostName(String(host)) ?? String(host))
        return .success(.tcp(host: canonicalHost, port: port, database: database))
    }
}

/// A local user named in `ShareCookiesOf=`.
public enum FleetUser: Sendable, Hashable, CustomStringConvertible {
    /// A user name, resolved to a uid at start.
    case name(String)
    /// A numeric uid.
    case uid(UInt32)

    /// How the user's jar is named across the fleet: the same name (or uid) on every machine
    /// shares one jar. Names and numbers are kept apart, so `1000` never meets a user called
    /// "1000".
    public var jarName: String {
        switch self {
        case .name(let name): return "user:\(name)"
        case .uid(let uid): return "uid:\(uid)"
        }
    }

    public var description: String {
        switch self {
        case .name(let name): return name
        case .uid(let uid): return String(uid)
        }
    }

    /// A uid (decimal digits) or a user name as useradd(8) accepts by default (letters, digits,
    /// `_`, `.`, `-`, not starting with a digit or `-`, up to 32 characters, optionally ending
    /// in `$`).
    public static func parse(_ word: String) -> FleetUser? {
        if word.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let uid = UInt32(word), uid != UInt32.max else { return nil }
            return .uid(uid)
        }
        var body = Substring(word)
        if body.hasSuffix("$") { body = body.dropLast() }
        guard !body.isEmpty, word.utf8.count <= 32, let first = body.utf8.first,
            first != UInt8(ascii: "-"), !(0x30...0x39).contains(first)
        else { return nil }
        let allowed = body.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x2E || byte == 0x2D
        }
        return allowed ? .name(word) : nil
    }
}

/// Why a fleet setting's value is unusable: a sentence for the configuration diagnostic.
public struct FleetSettingProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension FleetConfiguration {
    /// Whether `Name=` is usable inside a hash tag and a key: 1 to 64 of letters, digits, `.`,
    /// `_` and `-` (no `{`, `}` or `:`, which would break the key layout).
    public static func isValidName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= maximumNameLength else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x2E || byte == 0x2D
        }
    }
}
