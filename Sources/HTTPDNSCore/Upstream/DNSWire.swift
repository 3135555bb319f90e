/// The DNS wire format (RFC 1035 section 4) for one A or AAAA question: building the query and
/// reading the answer.
///
/// The parser takes untrusted bytes from the network and is fuzzed: every read is bounds-checked
/// and returns nil instead of trapping, and compression pointers must point strictly backwards
/// (each jump before the previous one), so a pointer loop cannot run forever.
public enum DNSWire {
    /// RFC 1035 section 2.3.4: a name is at most 255 octets on the wire.
    static let maxNameLength = 255
    /// How many CNAMEs are followed from the queried name before the answer counts as malformed.
    static let maxChainLength = 16
    private static let classIN: UInt16 = 1
    private static let typeCNAME: UInt16 = 5
    private static let typeSOA: UInt16 = 6

    /// A standard query with RD set and one question, class IN. `id` is 0 for DoH (RFC 8484 section 4.1,
    /// so HTTP caches can share answers). Nil if the name cannot be encoded (empty or overlong label).
    public static func makeQuery(host: String, type: DNSRecordType, id: UInt16 = 0) -> [UInt8]? {
        guard let labels = labels(of: host) else { return nil }
        var message: [UInt8] = []
        appendUInt16(id, to: &message)
        appendUInt16(0x0100, to: &message)  // QR=0, OPCODE=0 (QUERY), RD=1
        appendUInt16(1, to: &message)  // QDCOUNT
        appendUInt16(0, to: &message)  // ANCOUNT
        appendUInt16(0, to: &message)  // NSCOUNT
        appendUInt16(0, to: &message)  // ARCOUNT
        for label in labels {
            message.append(UInt8(label.count))
            message.append(contentsOf: label)
        }
        message.append(0)
        appendUInt16(type.rawValue, to: &message)
        appendUInt16(classIN, to: &message)
        return message
    }

    /// Reads a response to a query for `host`/`type`. The addresses are those of the end of the CNAME
    /// chain that starts at `host`; the TTL is the minimum along the chain and over the addresses used.
    public static func parseResponse(_ message: [UInt8], host: String, type: DNSRecordType)
        -> Result<UpstreamAnswer, UpstreamError>
    {
        guard let queried = labels(of: host) else {
            return .failure(UpstreamError(.malformed("queried name cannot be encoded")))
        }
        var reader = Reader(message)
        guard let header = reader.readHeader() else { return malformed("message shorter than its header") }
        guard header.flags & 0x8000 != 0 else { return malformed("not a response (QR=0)") }
        guard (header.flags >> 11) & 0xf == 0 else { return malformed("opcode is not QUERY") }
        if header.flags & 0x0200 != 0 { return .failure(UpstreamError(.truncated)) }
        let rcode = Int(header.flags & 0xf)
        guard rcode == 0 || rcode == 3 else { return .failure(UpstreamError(.dnsStatus(rcode))) }

        for index in 0..<Int(header.questionCount) {
            guard let name = reader.readName(), let qtype = reader.readUInt16(), reader.readUInt16() != nil else {
                return malformed("question section cut short")
            }
            if index == 0 && (name != queried || qtype != type.rawValue) {
                return malformed("the question is not the one asked")
            }
        }
        var answers: [Record] = []
        var authority: [Record] = []
        for index in 0..<(Int(header.answerCount) + Int(header.authorityCount)) {
            guard let record = reader.readRecord() else { return malformed("resource record cut short") }
            if index < Int(header.answerCount) { answers.append(record) } else { authority.append(record) }
        }
        let negativeTTL = authority.compactMap { reader.negativeTTL(of: $0) }.min()
        if rcode == 3 {
            return .success(UpstreamAnswer(ttl: negativeTTL ?? UpstreamAnswer.defaultTTL, nameExists: false))
        }

        // Follow the chain: queried name -> CNAME target -> ... -> the name owning the addresses.
        var current = queried
        var chainTTL: Int?
        var seen: [[[UInt8]]] = [queried]
        while let alias = answers.first(where: { $0.type == typeCNAME && $0.rrClass == classIN && $0.owner == current })
        {
            guard let target = reader.readName(inRData: alias) else { return malformed("CNAME target unreadable") }
            guard !seen.contains(target) else { return .failure(UpstreamError(.unusableChain("CNAME loop"))) }
            guard seen.count <= maxChainLength else {
                return .failure(UpstreamError(.unusableChain("CNAME chain longer than \(maxChainLength)")))
            }
            seen.append(target)
            chainTTL = min(chainTTL ?? alias.ttl, alias.ttl)
            current = target
        }
        var validator = AddressListValidator()
        var addressTTL: Int?
        for record in answers where record.type == type.rawValue && record.rrClass == classIN && record.owner == current
        {
            let rdata = message[record.rdata]
            guard let address = IPAddress(bytes: rdata), address.family == type.family else {
                validator.countRaw()
                continue
            }
            validator.countRaw()
            validator.add(address)
            addressTTL = min(addressTTL ?? record.ttl, record.ttl)
        }
        let ttl: Int
        if let addressTTL {
            ttl = min(addressTTL, chainTTL ?? addressTTL)
        } else {
            // NODATA: as long as the SOA says (RFC 2308 section 5), and never longer than the chain.
            let base = negativeTTL ?? UpstreamAnswer.defaultTTL
            ttl = min(base, chainTTL ?? base)
        }
        return validator.answer(ttl: ttl)
    }

    /// The lowercased labels of a dotted name (one trailing dot allowed), or nil if it cannot go on the wire.
    static func labels(of host: String) -> [[UInt8]]? {
        var bytes = Array(host.utf8)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        var labels: [[UInt8]] = []
        var length = 1
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count) else { return nil }
            length += label.count + 1
            labels.append(label.map(lowercased))
        }
        return length <= maxNameLength ? labels : nil
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    private static func appendUInt16(_ value: UInt16, to message: inout [UInt8]) {
        message.append(UInt8(value >> 8))
        message.append(UInt8(value & 0xff))
    }

    private static func malformed(_ detail: String) -> Result<UpstreamAnswer, UpstreamError> {
        .failure(UpstreamError(.malformed(detail)))
    }

    struct Header {
        var id: UInt16
        var flags: UInt16
        var questionCount: UInt16
        var answerCount: UInt16
        var authorityCount: UInt16
        var additionalCount: UInt16
    }

    struct Record {
        var owner: [[UInt8]]
        var type: UInt16
        var rrClass: UInt16
        var ttl: Int
        var rdata: Range<Int>
    }

    /// A cursor over the message; every read checks bounds and returns nil past the end.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func readUInt16() -> UInt16? {
            guard offset + 2 <= bytes.count else { return nil }
            defer { offset += 2 }
            return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }

        mutating func readUInt32() -> UInt32? {
            guard let high = readUInt16(), let low = readUInt16() else { return nil }
            return UInt32(high) << 16 | UInt32(low)
        }

        mutating func readHeader() -> Header? {
            guard let id = readUInt16(), let flags = readUInt16(), let qd = readUInt16(), let an = readUInt16(),
                let ns = readUInt16(), let ar = readUInt16()
            else { return nil }
            return Header(
                id: id, flags: flags, questionCount: qd, answerCount: an, authorityCount: ns, additionalCount: ar)
        }

        /// A name at the cursor; the cursor moves past it (past the first pointer, if any).
        mutating func readName() -> [[UInt8]]? {
            guard let (labels, end) = DNSWire.readName(bytes, at: offset) else { return nil }
            offset = end
            return labels
        }

        /// A name stored in a record's RDATA, which must not run past the RDATA.
        func readName(inRData record: Record) -> [[UInt8]]? {
            guard let (labels, end) = DNSWire.readName(bytes, at: record.rdata.lowerBound),
                end <= record.rdata.upperBound
            else { return nil }
            return labels
        }

        mutating func readRecord() -> Record? {
            guard let owner = readName(), let type = readUInt16(), let rrClass = readUInt16(),
                let rawTTL = readUInt32(), let length = readUInt16()
            else { return nil }
            let end = offset + Int(length)
            guard end <= bytes.count else { return nil }
            defer { offset = end }
            // RFC 2181 section 8: a TTL with the top bit set is read as zero.
            let ttl = rawTTL & 0x8000_0000 != 0 ? 0 : Int(rawTTL)
            return Record(owner: owner, type: type, rrClass: rrClass, ttl: ttl, rdata: offset..<end)
        }

        /// RFC 2308 section 5: a negative answer lives min(SOA TTL, SOA MINIMUM); nil if not a readable SOA.
        func negativeTTL(of record: Record) -> Int? {
            guard record.type == DNSWire.typeSOA else { return nil }
            guard let (_, afterMName) = DNSWire.readName(bytes, at: record.rdata.lowerBound),
                let (_, afterRName) = DNSWire.readName(bytes, at: afterMName),
                afterRName + 20 == record.rdata.upperBound
            else { return nil }
            var cursor = Reader(bytes)
            cursor.offset = afterRName + 16
            guard let minimum = cursor.readUInt32() else { return nil }
            let soaMinimum = minimum & 0x8000_0000 != 0 ? 0 : Int(minimum)
            return min(record.ttl, soaMinimum)
        }
    }

    /// Reads a possibly compressed name at `start`: its lowercased labels and the offset just past it.
    static func readName(_ bytes: [UInt8], at start: Int) -> (labels: [[UInt8]], end: Int)? {
        var labels: [[UInt8]] = []
        var position = start
        var end: Int?
        var length = 1
        var limit = Int.max
        while true {
            guard position >= 0, position < bytes.count else { return nil }
            let lengthByte = Int(bytes[position])
            switch lengthByte & 0xc0 {
            case 0x00:
                if lengthByte == 0 { return (labels, end ?? position + 1) }
                let labelEnd = position + 1 + lengthByte
                guard labelEnd <= bytes.count else { return nil }
                length += lengthByte + 1
                guard length <= maxNameLength else { return nil }
                labels.append(bytes[(position + 1)..<labelEnd].map(lowercased))
                position = labelEnd
            case 0xc0:
                guard position + 1 < bytes.count else { return nil }
                let target = (lengthByte & 0x3f) << 8 | Int(bytes[position + 1])
                // Strictly backwards, and before every earlier jump: this is what rules out loops.
                guard target < min(limit, position) else { return nil }
                if end == nil { end = position + 2 }
                limit = target
                position = target
            default:
                return nil  // 0x40 and 0x80 label types (RFC 6891 section 5) are not used in answers.
            }
        }
    }
}

/// RFC 8484 DNS-over-HTTPS with `application/dns-message`, by GET (`?dns=`) or POST.
public struct DoHWire: Sendable {
    public enum Method: Sendable {
        case get
        case post
    }

    /// The configured URL, e.g. `https://dns.example/dns-query`.
    public let baseURL: String
    public let method: Method

    public init(baseURL: String, method: Method = .get) {
        self.baseURL = baseURL
        self.method = method
    }

    /// Nil if `host` cannot be put on the wire (it should have been validated before).
    public func request(host: String, type: DNSRecordType) -> UpstreamHTTPRequest? {
        guard let query = DNSWire.makeQuery(host: host, type: type) else { return nil }
        switch method {
        case .get:
            return UpstreamHTTPRequest(
                url: URLQuery.append("dns=" + Base64URL.encode(query), to: baseURL),
                headers: [UpstreamHeader("Accept", "application/dns-message")]
            )
        case .post:
            return UpstreamHTTPRequest(
                method: .post,
                url: baseURL,
                headers: [
                    UpstreamHeader("Accept", "application/dns-message"),
                    UpstreamHeader("Content-Type", "application/dns-message"),
                ],
                body: query
            )
        }
    }

    public static func parse(status: Int, body: [UInt8], host: String, type: DNSRecordType)
        -> Result<UpstreamAnswer, UpstreamError>
    {
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        return DNSWire.parseResponse(body, host: host, type: type)
    }
}

/// Base64url without padding (RFC 4648 section 5), as RFC 8484 section 4.1 requires for `dns=`.
public enum Base64URL {
    private static let alphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".unicodeScalars)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = ""
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = 0
            for (position, byte) in chunk.enumerated() { value |= Int(byte) << (16 - 8 * position) }
            for position in 0...chunk.count {
                out.unicodeScalars.append(alphabet[(value >> (18 - 6 * position)) & 0x3f])
            }
            index += 3
        }
        return out
    }
}
