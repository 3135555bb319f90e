import HTTPDNSProtocol

/// A validated answer from one upstream for one host.
///
/// Each family keeps at most `maxAddressesPerFamily` addresses, the first ones in the upstream's
/// order with duplicates removed: a client connects to one of the first few, and an answer with
/// tens of thousands of addresses must cost neither quadratic time nor the whole IP -> host
/// memory of the user who asked.
public struct UpstreamAnswer: Sendable, Hashable {
    /// TTL used when an upstream gives none (Alibaba's and Tencent's clients give local answers 60 s too).
    public static let defaultTTL = 60
    /// RFC 2181 section 8: TTLs are 31-bit; anything larger is treated as this maximum.
    public static let maxTTL = Int(Int32.max)
    /// Addresses kept per family of one answer (RFC 1035's 512-byte UDP answer holds at most
    /// about 30 A records; HTTPDNS services send a handful).
    public static let maxAddressesPerFamily = 32

    public var ipv4: [IPAddress]
    public var ipv6: [IPAddress]
    /// Seconds the IPv4 part is valid: its own records' TTL where the upstream gives one per
    /// family (DNS asks A and AAAA apart; Tencent's `v4,TTL-v6,TTL`).
    public var ipv4TTL: Int
    /// Seconds the IPv6 part is valid.
    public var ipv6TTL: Int
    /// False means the upstream said definitively that the name does not exist (NXDOMAIN).
    public var nameExists: Bool

    /// Addresses of the wrong family are dropped; each list is deduplicated and capped. Both
    /// families are valid for `ttl`.
    public init(ipv4: [IPAddress] = [], ipv6: [IPAddress] = [], ttl: Int, nameExists: Bool = true) {
        self.init(ipv4: ipv4, ipv6: ipv6, ipv4TTL: ttl, ipv6TTL: ttl, nameExists: nameExists)
    }

    /// An answer whose families have TTLs of their own.
    public init(ipv4: [IPAddress], ipv6: [IPAddress], ipv4TTL: Int, ipv6TTL: Int, nameExists: Bool = true) {
        self.ipv4 = Self.capped(ipv4, family: .ipv4)
        self.ipv6 = Self.capped(ipv6, family: .ipv6)
        self.ipv4TTL = min(max(ipv4TTL, 0), UpstreamAnswer.maxTTL)
        self.ipv6TTL = min(max(ipv6TTL, 0), UpstreamAnswer.maxTTL)
        self.nameExists = nameExists
    }

    /// Seconds; the smaller of the two families' TTLs.
    public var ttl: Int { min(ipv4TTL, ipv6TTL) }

    public var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

    /// The addresses of one family.
    public func addresses(_ family: IPFamily) -> [IPAddress] {
        family == .ipv4 ? ipv4 : ipv6
    }

    /// The TTL of one family.
    public func ttl(_ family: IPFamily) -> Int {
        family == .ipv4 ? ipv4TTL : ipv6TTL
    }

    /// Joins the answers of two single-family queries (DoH asks A and AAAA separately): each
    /// family keeps its own addresses and TTL. The name is missing only if both said so.
    public static func combining(ipv4 first: UpstreamAnswer, ipv6 second: UpstreamAnswer) -> UpstreamAnswer {
        UpstreamAnswer(
            ipv4: first.ipv4, ipv6: second.ipv6, ipv4TTL: first.ipv4TTL, ipv6TTL: second.ipv6TTL,
            nameExists: first.nameExists || second.nameExists)
    }

    /// The first `maxAddressesPerFamily` distinct addresses of `family`, in one pass.
    private static func capped(_ addresses: [IPAddress], family: IPFamily) -> [IPAddress] {
        var seen = Set<IPAddress>()
        var kept: [IPAddress] = []
        for address in addresses where address.family == family {
            guard kept.count < maxAddressesPerFamily else { break }
            if seen.insert(address).inserted { kept.append(address) }
        }
        return kept
    }
}

/// Turns the address strings an upstream sent into validated addresses of one family.
///
/// Junk is dropped, but if every entry is junk the whole answer is malformed: an upstream that
/// sends only garbage is broken, and must not look like one that knows of no address. Once a
/// family holds `UpstreamAnswer.maxAddressesPerFamily` distinct addresses, later entries of it
/// are only counted, so a huge list costs one pass and bounded memory.
struct AddressListValidator {
    private(set) var rawCount = 0
    private(set) var ipv4: [IPAddress] = []
    private(set) var ipv6: [IPAddress] = []
    private var seen = Set<IPAddress>()

    /// Adds one entry that should be of `family`; returns whether it is kept (a valid address,
    /// its family not yet full), so callers take the TTL of kept entries only.
    @discardableResult
    mutating func add(_ text: String?, as family: IPFamily) -> Bool {
        rawCount += 1
        guard let text, !isFull(family) else { return false }
        let trimmed = text.trimmingASCIIWhitespace()
        let parsed = family == .ipv4 ? IPAddress(ipv4: trimmed) : IPAddress(ipv6: trimmed)
        guard let address = parsed else { return false }
        add(address)
        return true
    }

    /// Adds an already-parsed address (from DNS wire bytes).
    mutating func add(_ address: IPAddress) {
        guard !isFull(address.family), seen.insert(address).inserted else { return }
        switch address.family {
        case .ipv4: ipv4.append(address)
        case .ipv6: ipv6.append(address)
        }
    }

    mutating func countRaw() { rawCount += 1 }

    private func isFull(_ family: IPFamily) -> Bool {
        (family == .ipv4 ? ipv4.count : ipv6.count) >= UpstreamAnswer.maxAddressesPerFamily
    }

    /// The answer, or `.malformed` when entries were sent but none was a valid address.
    func answer(ttl: Int, nameExists: Bool = true) -> Result<UpstreamAnswer, UpstreamError> {
        answer(ipv4TTL: ttl, ipv6TTL: ttl, nameExists: nameExists)
    }

    /// The answer with a TTL per family.
    func answer(ipv4TTL: Int, ipv6TTL: Int, nameExists: Bool = true) -> Result<UpstreamAnswer, UpstreamError> {
        if rawCount > 0 && ipv4.isEmpty && ipv6.isEmpty {
            return .failure(UpstreamError(.malformed("none of the \(rawCount) addresses is a valid IP address")))
        }
        return .success(
            UpstreamAnswer(ipv4: ipv4, ipv6: ipv6, ipv4TTL: ipv4TTL, ipv6TTL: ipv6TTL, nameExists: nameExists))
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
