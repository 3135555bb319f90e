import HTTPDNSProtocol

/// Which cookie of which shared jar a change is about: the jar's fleet-wide name
/// (`FleetUser.jarName`) and the cookie's identity in the jar.
///
/// The identity is the jar's own `CookieKey` (domain, path, name): a cookie with the same three
/// replaces the stored one whatever its host-only flag, so the host-only flag is part of the
/// replicated value rather than of the identity. Registers finer than the jar's replacement rule
/// could not converge: two of them would fight over one slot of the jar.
public struct FleetCookieAddress: Sendable, Hashable, CustomStringConvertible {
    public var jar: String
    public var key: CookieKey

    public init(jar: String, key: CookieKey) {
        self.jar = jar
        self.key = key
    }

    public var description: String { "\(jar) \(key.domain)\(key.path) \(key.name)" }
}

/// What a change replicates of a cookie: every attribute except this daemon's bookkeeping
/// (creation index, last access), which each jar keeps for itself.
public struct FleetCookieValue: Sendable, Equatable {
    public var value: String
    public var hostOnly: Bool
    public var expires: Int64?
    public var secure: Bool
    public var httpOnly: Bool
    public var sameSite: CookieSameSite
    public var partitioned: Bool
    public var created: Int64

    public init(
        value: String, hostOnly: Bool, expires: Int64?, secure: Bool, httpOnly: Bool, sameSite: CookieSameSite,
        partitioned: Bool, created: Int64
    ) {
        self.value = value
        self.hostOnly = hostOnly
        self.expires = expires
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.partitioned = partitioned
        self.created = created
    }

    public init(_ cookie: Cookie) {
        self.init(
            value: cookie.value, hostOnly: cookie.hostOnly, expires: cookie.expires, secure: cookie.secure,
            httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, partitioned: cookie.partitioned,
            created: cookie.created)
    }

    /// The cookie to store in a jar, with that jar's bookkeeping.
    public func cookie(_ key: CookieKey, creationIndex: UInt64, lastAccess: Int64) -> Cookie {
        Cookie(
            name: key.name, value: value, domain: key.domain, hostOnly: hostOnly, path: key.path, expires: expires,
            secure: secure, httpOnly: httpOnly, sameSite: sameSite, partitioned: partitioned, created: created,
            creationIndex: creationIndex, lastAccess: lastAccess)
    }
}

/// One replicated change of a shared jar: the record that goes through the outbox, the change
/// stream and the snapshot (sealed), and that every daemon applies last-writer-wins.
///
/// Encoded as compact JSON before sealing:
/// `{"v":1,"jar":"user:crawler","domain":"example.com","path":"/","name":"sid","updated":1767225600123,`
/// `"machine":"<32 hex>","cookie":{"value":"abc","hostOnly":true,"expires":1767225600,"secure":true,`
/// `"httpOnly":true,"sameSite":"lax","partitioned":false,"created":1764400000}}`, or with
/// `"deleted":true` instead of `"cookie"` for a deletion (a tombstone, kept until
/// `FleetCookieReplica.tombstoneLifetimeMs` after `updated`).
public struct FleetCookieChange: Sendable, Equatable {
    /// What the change leaves behind.
    public enum Content: Sendable, Equatable {
        case set(FleetCookieValue)
        case deleted
    }

    /// The `v` of records written by this version.
    public static let formatVersion = 1
    /// Longest jar name (`user:` and a 32-character user name, with room to spare).
    public static let maximumJarLength = 64

    public var address: FleetCookieAddress
    public var version: FleetVersion
    public var content: Content

    public init(address: FleetCookieAddress, version: FleetVersion, content: Content) {
        self.address = address
        self.version = version
        self.content = content
    }

    public var isDeletion: Bool { content == .deleted }

    /// The plaintext that gets sealed.
    public func encoded() -> [UInt8] {
        var object = JSONObject()
        object.append("v", .int(Self.formatVersion))
        object.append("jar", .string(address.jar))
        object.append("domain", .string(address.key.domain))
        object.append("path", .string(address.key.path))
        object.append("name", .string(address.key.name))
        object.append("updated", .int64(version.updatedAtMs))
        object.append("machine", .string(version.machine.text))
        switch content {
        case .deleted:
            object.append("deleted", .bool(true))
        case .set(let cookie):
            var value = JSONObject()
            value.append("value", .string(cookie.value))
            value.append("hostOnly", .bool(cookie.hostOnly))
            value.append("expires", cookie.expires.map(JSON.int64) ?? .null)
            value.append("secure", .bool(cookie.secure))
            value.append("httpOnly", .bool(cookie.httpOnly))
            value.append("sameSite", .string(cookie.sameSite.rawValue))
            value.append("partitioned", .bool(cookie.partitioned))
            value.append("created", .int64(cookie.created))
            object.append("cookie", .object(value))
        }
        return JSON.object(object).encoded
    }

    /// Decodes and validates an opened change.
    public static func decode(_ bytes: [UInt8]) -> Result<FleetCookieChange, FleetRecordError> {
        guard let json = try? JSONParser.parse(bytes), let object = json.objectValue else {
            return .failure(FleetRecordError("not a JSON object"))
        }
        guard object["v"]?.numberValue?.int64Value == Int64(formatVersion) else {
            return .failure(FleetRecordError("unknown record version"))
        }
        guard let jar = object["jar"]?.stringValue, !jar.isEmpty, jar.utf8.count <= maximumJarLength,
            !hasControl(jar)
        else { return .failure(FleetRecordError("invalid jar")) }
        guard let domain = object["domain"]?.stringValue, !domain.isEmpty, domain.utf8.count <= HostName.maxLength + 2,
            domain == domain.lowercased(), !hasControl(domain)
        else { return .failure(FleetRecordError("invalid domain")) }
        guard let path = object["path"]?.stringValue, path.utf8.first == UInt8(ascii: "/"),
            path.utf8.count <= SetCookieParser.maxAttributeValueOctets, !hasControl(path)
        else { return .failure(FleetRecordError("invalid path")) }
        guard let name = object["name"]?.stringValue, !hasControl(name) else {
            return .failure(FleetRecordError("invalid name"))
        }
        guard let updated = object["updated"]?.numberValue?.int64Value, updated >= 0,
            let machineText = object["machine"]?.stringValue, let machine = FleetMachineID(machineText)
        else { return .failure(FleetRecordError("invalid version")) }
        let address = FleetCookieAddress(jar: jar, key: CookieKey(domain: domain, path: path, name: name))
        let version = FleetVersion(updatedAtMs: updated, machine: machine)
        if object["deleted"]?.boolValue == true {
            guard object["cookie"] == nil else { return .failure(FleetRecordError("both deleted and a cookie")) }
            return .success(FleetCookieChange(address: address, version: version, content: .deleted))
        }
        guard let cookie = object["cookie"]?.objectValue, let value = cookie["value"]?.stringValue,
            let hostOnly = cookie["hostOnly"]?.boolValue, let secure = cookie["secure"]?.boolValue,
            let httpOnly = cookie["httpOnly"]?.boolValue, let partitioned = cookie["partitioned"]?.boolValue,
            let sameSiteText = cookie["sameSite"]?.stringValue, let sameSite = CookieSameSite(rawValue: sameSiteText),
            let created = cookie["created"]?.numberValue?.int64Value
        else { return .failure(FleetRecordError("invalid cookie")) }
        let expires: Int64?
        switch cookie["expires"] {
        case .some(.null): expires = nil
        case .some(.number(let number)):
            guard let seconds = number.int64Value else { return .failure(FleetRecordError("invalid expires")) }
            expires = seconds
        default: return .failure(FleetRecordError("invalid expires"))
        }
        let content = FleetCookieValue(
            value: value, hostOnly: hostOnly, expires: expires, secure: secure, httpOnly: httpOnly, sameSite: sameSite,
            partitioned: partitioned, created: created)
        // The checks the jar applies to any cookie from outside (sizes, control characters).
        guard CookieJar.isStorable(content.cookie(address.key, creationIndex: 0, lastAccess: 0)) else {
            return .failure(FleetRecordError("cookie not storable"))
        }
        return .success(FleetCookieChange(address: address, version: version, content: .set(content)))
    }

    /// The control characters a cookie can never hold (the Set-Cookie parser's rule: tab is allowed).
    private static func hasControl(_ text: String) -> Bool {
        text.utf8.contains(where: SetCookieParser.isForbiddenControl)
    }
}
