import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSodium
import HTTPDNSSystem

/// What a `[Fleet]` section turns into at start: the client's options with the password read,
/// the fleet key read, and the shared users resolved to uids.
public struct FleetSetup: Sendable {
    public let clientOptions: FleetClientOptions
    public let key: FleetKey
    /// `ShareCache=`.
    public let shareCache: Bool
    /// The shared jars: each listed user's uid and the jar's fleet-wide name.
    public let sharedJars: [UInt32: String]

    /// Reads the key and password files and looks the users up. `resolverTimeoutMs` is the
    /// resolver's `Timeout=`: each Redis exchange gets a quarter of it (at least 250 ms) for the
    /// whole reply, so a stalled or trickling Redis still leaves the upstreams time to answer.
    public static func load(_ configuration: FleetConfiguration, resolverTimeoutMs: Int) throws(FleetSetupError)
        -> FleetSetup
    {
        do {
            try Sodium.load()
        } catch {
            throw FleetSetupError(error.description, library: error)
        }
        let key: FleetKey
        do {
            key = try FleetKey.load(path: configuration.keyFile)
        } catch {
            throw FleetSetupError("KeyFile=\(error)")
        }
        var password: RedisPassword?
        if let file = configuration.passwordFile {
            var bytes: [UInt8]
            do {
                bytes = try Files.readSecret(file, limit: 4_096)
            } catch {
                throw FleetSetupError("PasswordFile=\(error)")
            }
            defer { Sodium.wipe(&bytes) }
            var end = bytes.endIndex
            while end > bytes.startIndex, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") {
                end -= 1
            }
            guard end > bytes.startIndex else { throw FleetSetupError("PasswordFile=\(file) is empty") }
            password = RedisPassword(Array(bytes[..<end]))
        }
        var sharedJars: [UInt32: String] = [:]
        for user in configuration.shareCookiesOf {
            let uid: UInt32
            switch user {
            case .uid(let number): uid = number
            case .name(let name):
                guard let found = UserAccounts.uid(named: name) else {
                    throw FleetSetupError("ShareCookiesOf=: there is no user called \(name)")
                }
                uid = found
            }
            guard sharedJars[uid] == nil else { throw FleetSetupError("ShareCookiesOf=: uid \(uid) is listed twice") }
            sharedJars[uid] = user.jarName
        }
        let endpoint: RedisEndpoint
        let database: Int
        switch configuration.redis {
        case .tcp(let host, let port, let db):
            endpoint = .tcp(host: host, port: port)
            database = db
        case .unix(let path):
            endpoint = .unix(path: path)
            database = 0
        }
        let redis = RedisOptions(
            endpoint: endpoint, database: database, password: password, connectTimeoutMilliseconds: 1_000,
            commandTimeoutMilliseconds: max(250, resolverTimeoutMs / 4),
            replyLimits: RESPReader.Limits(
                maxBulkBytes: FleetRedis.maxValueBytes, maxReplyBytes: FleetRedis.maxReplyBytes))
        return FleetSetup(
            clientOptions: FleetClientOptions(redis: redis, fleetName: configuration.name), key: key,
            shareCache: configuration.shareCache, sharedJars: sharedJars)
    }
}

/// Why the fleet could not be set up at start; names the setting, never a secret.
public struct FleetSetupError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// Set when the configuration is fine but a library the fleet needs cannot be loaded: the
    /// daemon then serves without the fleet instead of not at all.
    public let library: DynamicLibraryError?

    public init(_ description: String, library: DynamicLibraryError? = nil) {
        self.description = description
        self.library = library
    }
}
