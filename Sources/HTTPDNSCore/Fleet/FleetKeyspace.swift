import HTTPDNSProtocol

/// Computes the keyed hash that names a fleet key; the fleet target implements it with the
/// fleet key's naming subkey, tests with anything deterministic.
public protocol FleetNameHashing: Sendable {
    /// A hash of `material` for names of `purpose` (fixed length, lowercase hexadecimal).
    func hashedName(purpose: String, _ material: [UInt8]) -> String
}

/// The layout of a fleet's Redis keys. Every key starts with `httpdnsd:{NAME}:`, so a Redis
/// Cluster hashes all of them by the tag `NAME` and keeps the fleet on one shard (the scripts
/// that touch several keys at once need that). What follows the tag is either a fixed word or
/// a keyed hash: no host name, address, user or cookie name ever appears in a key.
public struct FleetKeyspace: Sendable {
    /// The `Name=` of the fleet.
    public let fleetName: String
    private let hasher: any FleetNameHashing
    private let prefix: String

    public init(fleetName: String, hasher: any FleetNameHashing) {
        precondition(FleetConfiguration.isValidName(fleetName), "Name= is validated when the configuration is read")
        self.fleetName = fleetName
        self.hasher = hasher
        self.prefix = "httpdnsd:{\(fleetName)}:"
    }

    /// One cached answer: the addresses of `host` in `family`.
    public func cacheKey(host: String, family: IPFamily) -> String {
        prefix + "dns:" + hasher.hashedName(purpose: "dns", Self.material([host, family.rawValue]))
    }

    /// The short lock held by the machine that queries the upstreams for `host`.
    public func lockKey(host: String) -> String {
        prefix + "lock:" + hasher.hashedName(purpose: "lock", Self.material([host]))
    }

    /// The stream of cookie changes (bounded with `MAXLEN ~`).
    public var changesKey: String { prefix + "changes" }

    /// The hash holding the newest change of every shared cookie: what a daemon that fell
    /// behind the stream catches up from.
    public var snapshotKey: String { prefix + "snapshot" }

    /// A random id written once per Redis dataset: a daemon that finds another one knows Redis
    /// lost its data (restarted empty, or replaced) and republishes what it holds.
    public var epochKey: String { prefix + "epoch" }

    /// The field of `snapshotKey` for one cookie of one shared jar.
    public func snapshotField(_ address: FleetCookieAddress) -> String {
        hasher.hashedName(
            purpose: "cookie", Self.material([address.jar, address.key.domain, address.key.path, address.key.name]))
    }

    /// The parts, each preceded by its length, so that no two lists of parts give the same bytes.
    static func material(_ parts: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for part in parts {
            let count = UInt32(truncatingIfNeeded: part.utf8.count)
            bytes += [UInt8(truncatingIfNeeded: count >> 24), UInt8(truncatingIfNeeded: count >> 16)]
            bytes += [UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
            bytes.append(contentsOf: part.utf8)
        }
        return bytes
    }
}
