/// Which address families a resolve asks for (the `family` parameter of `resolve`).
public enum ResolveFamily: String, Sendable, Hashable, CaseIterable {
    case ipv4
    case ipv6
    case both

    public var wantsIPv4: Bool { self != .ipv6 }
    public var wantsIPv6: Bool { self != .ipv4 }
}

/// A validated answer from one upstream for one host.
public struct UpstreamAnswer: Sendable, Hashable {
    /// TTL used when an upstream gives none (Alibaba's and Tencent's clients give local answers 60 s too).
    public static let defaultTTL = 60
    /// RFC 2181 section 8: TTLs are 31-bit; anything larger is treated as this maximum.
    public static let maxTTL = Int(Int32.max)

    public var ipv4: [IPAddress]
    public var ipv6: [IPAddress]
    /// Seconds; the minimum over everything the answer was built from.
    public var ttl: Int
    /// False means the upstream said definitively that the name does not exist (NXDOMAIN).
    public var nameExists: Bool

    public init(ipv4: [IPAddress] = [], ipv6: [IPAddress] = [], ttl: Int, nameExists: Bool = true) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = min(max(ttl, 0), UpstreamAnswer.maxTTL)
        self.nameExists = nameExists
    }

    public var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

    /// Joins the answers of two single-family queries (DoH asks A and AAAA separately).
    /// The name is missing only if both said so; the TTL is the smaller one.
    public static func combining(_ first: UpstreamAnswer, _ second: UpstreamAnswer) -> UpstreamAnswer {
        UpstreamAnswer(
            ipv4: first.ipv4 + second.ipv4.filter { !first.ipv4.contains($0) },
            ipv6: first.ipv6 + second.ipv6.filter { !first.ipv6.contains($0) },
            ttl: min(first.ttl, second.ttl),
            nameExists: first.nameExists || second.nameExists
        )
    }
}

/// Turns the address strings an upstream sent into validated addresses of one family.
///
/// Junk is dropped, but if every entry is junk the whole answer is malformed: an upstream that
/// sends only garbage is broken, and must not look like one that knows of no address.
struct AddressListValidator {
    private(set) var rawCount = 0
    private(set) var ipv4: [IPAddress] = []
    private(set) var ipv6: [IPAddress] = []

    /// Adds one entry that should be of `family`; returns whether it was kept.
    @discardableResult
    mutating func add(_ text: String?, as family: IPAddress.Family) -> Bool {
        rawCount += 1
        guard let text else { return false }
        let trimmed = text.trimmingASCIIWhitespace()
        let parsed = family == .v4 ? IPAddress(ipv4: trimmed) : IPAddress(ipv6: trimmed)
        guard let address = parsed else { return false }
        add(address)
        return true
    }

    /// Adds an already-parsed address (from DNS wire bytes).
    mutating func add(_ address: IPAddress) {
        switch address.family {
        case .v4: if !ipv4.contains(address) { ipv4.append(address) }
        case .v6: if !ipv6.contains(address) { ipv6.append(address) }
        }
    }

    mutating func countRaw() { rawCount += 1 }

    /// The answer, or `.malformed` when entries were sent but none was a valid address.
    func answer(ttl: Int, nameExists: Bool = true) -> Result<UpstreamAnswer, UpstreamError> {
        if rawCount > 0 && ipv4.isEmpty && ipv6.isEmpty {
            return .failure(UpstreamError(.malformed("none of the \(rawCount) addresses is a valid IP address")))
        }
        return .success(UpstreamAnswer(ipv4: ipv4, ipv6: ipv6, ttl: ttl, nameExists: nameExists))
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
