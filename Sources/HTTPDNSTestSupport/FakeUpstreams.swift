import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

// Fakes of the non-Alibaba upstream kinds (Tencent's text answers, DoH and DoH JSON). The DNS wire bytes are
// built here by hand from RFC 1035, independently of the daemon's codec, so a test compares the daemon
// against the RFC and not against itself.

/// One resource record a fake DNS service knows about.
public struct FakeDNSRecord: Sendable {
    public enum Data: Sendable {
        case a(String)
        case aaaa(String)
        case cname(String)
        /// Any other type, with its RDATA as given (e.g. TXT), to check that it is skipped.
        case other(type: UInt16, rdata: [UInt8])
        /// An A or AAAA record whose RDATA is `rdata` as given (a wrong length, for malformed answers).
        case rawAddress(type: UInt16, rdata: [UInt8])
    }

    public var name: String
    public var ttl: UInt32
    public var data: Data

    public init(_ name: String, ttl: UInt32, _ data: Data) {
        self.name = name
        self.ttl = ttl
        self.data = data
    }

    public var type: UInt16 {
        switch data {
        case .a: return 1
        case .aaaa: return 28
        case .cname: return 5
        case .other(let type, _), .rawAddress(let type, _): return type
        }
    }

    /// The text form used in `application/dns-json` rows.
    public var jsonData: String {
        switch data {
        case .a(let text), .aaaa(let text): return text
        case .cname(let target): return target.hasSuffix(".") ? target : target + "."
        case .other(_, let rdata), .rawAddress(_, let rdata): return String(decoding: rdata, as: UTF8.self)
        }
    }
}

/// A tiny authoritative view: records by owner name, and names that do not exist (NXDOMAIN).
public struct FakeDNSZone: Sendable {
    public var records: [FakeDNSRecord]
    public var nonexistent: Set<String>

    public init(records: [FakeDNSRecord], nonexistent: Set<String> = []) {
        self.records = records
        self.nonexistent = nonexistent
    }

    /// RCODE and answer section for a question, as a recursive resolver would give them:
    /// the CNAME chain from `name` (in order), then the records of `type` at its end.
    public func answer(name: String, type: UInt16) -> (rcode: UInt8, answers: [FakeDNSRecord]) {
        var current = FakeDNSZone.normalized(name)
        if nonexistent.contains(current) { return (3, []) }
        var answers: [FakeDNSRecord] = []
        var steps = 0
        while steps < 16,
            let alias = records.first(where: { FakeDNSZone.normalized($0.name) == current && $0.type == 5 }),
            case .cname(let target) = alias.data
        {
            answers.append(alias)
            current = FakeDNSZone.normalized(target)
            steps += 1
        }
        answers += records.filter { FakeDNSZone.normalized($0.name) == current && $0.type == type }
        return (0, answers)
    }

    static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}

/// A DNS question read from query bytes.
public struct FakeDNSQuestion: Sendable, Equatable {
    public var id: UInt16
    public var flags: UInt16
    public var name: String
    public var type: UInt16
    public var qclass: UInt16

    public init(id: UInt16 = 0, flags: UInt16 = 0x0100, name: String, type: UInt16, qclass: UInt16 = 1) {
        self.id = id
        self.flags = flags
        self.name = name
        self.type = type
        self.qclass = qclass
    }
}

/// RFC 1035 section 4 messages, written and read by hand for the fakes.
public enum FakeDNSWire {
    /// Reads the header and first question of a query (no compression expected in a query).
    public static func parseQuery(_ bytes: [UInt8]) -> FakeDNSQuestion? {
        guard bytes.count >= 12 else { return nil }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        guard u16(4) == 1 else { return nil }  // QDCOUNT
        var offset = 12
        var labels: [String] = []
        while true {
            guard offset < bytes.count else { return nil }
            let length = Int(bytes[offset])
            offset += 1
            if length == 0 { break }
            guard length <= 63, offset + length <= bytes.count else { return nil }
            labels.append(String(decoding: bytes[offset..<(offset + length)], as: UTF8.self))
            offset += length
        }
        guard offset + 4 <= bytes.count else { return nil }
        return FakeDNSQuestion(
            id: u16(0), flags: u16(2), name: labels.joined(separator: "."), type: u16(offset), qclass: u16(offset + 2))
    }

    /// A response to `question`: QR, RD and RA set, the question echoed, `answers` in the answer section
    /// and, when given, an SOA in the authority section whose MINIMUM is `negativeTTL` (RFC 2308).
    /// Every name (owners and CNAME targets) is compressed against earlier ones (RFC 1035 section 4.1.4).
    public static func response(
        to question: FakeDNSQuestion, rcode: UInt8, answers: [FakeDNSRecord], negativeTTL: UInt32? = nil
    ) -> [UInt8] {
        var writer = Writer()
        writer.u16(question.id)
        writer.u16(0x8180 | UInt16(rcode))  // QR=1, RD=1, RA=1
        writer.u16(1)
        writer.u16(UInt16(answers.count))
        writer.u16(negativeTTL == nil ? 0 : 1)
        writer.u16(0)
        writer.name(question.name)
        writer.u16(question.type)
        writer.u16(question.qclass)
        for record in answers {
            writer.name(record.name)
            writer.u16(record.type)
            writer.u16(1)  // IN
            writer.u32(record.ttl)
            writer.rdata { writer in
                switch record.data {
                case .a(let text): writer.bytes(FakeDNSWire.addressBytes(text, family: AF_INET) ?? [])
                case .aaaa(let text): writer.bytes(FakeDNSWire.addressBytes(text, family: AF_INET6) ?? [])
                case .cname(let target): writer.name(target)
                case .other(_, let rdata), .rawAddress(_, let rdata): writer.bytes(rdata)
                }
            }
        }
        if let negativeTTL {
            let zone = question.name.split(separator: ".").suffix(2).joined(separator: ".")
            writer.name(zone)
            writer.u16(6)  // SOA
            writer.u16(1)
            writer.u32(negativeTTL)
            writer.rdata { writer in
                writer.name("ns." + zone)
                writer.name("hostmaster." + zone)
                for value: UInt32 in [1, 3600, 600, 86400, negativeTTL] { writer.u32(value) }
            }
        }
        return writer.bytes
    }

    /// inet_pton, so the fake's address bytes do not come from the daemon's parser.
    public static func addressBytes(_ text: String, family: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: family == AF_INET ? 4 : 16)
        let ok = buffer.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return ok == 1 ? buffer : nil
    }

    /// Appends DNS fields, remembering where each name suffix was written for compression.
    struct Writer {
        var bytes: [UInt8] = []
        private var suffixes: [String: Int] = [:]

        mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xff)] }

        mutating func u32(_ value: UInt32) {
            bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
        }

        mutating func bytes(_ more: [UInt8]) { bytes += more }

        /// Writes labels until a suffix already in the message, then a pointer to it (or the root).
        mutating func name(_ name: String) {
            let labels = FakeDNSZone.normalized(name).split(separator: ".").map(String.init)
            for index in labels.indices {
                let suffix = labels[index...].joined(separator: ".")
                if let offset = suffixes[suffix] {
                    u16(0xC000 | UInt16(offset))
                    return
                }
                if bytes.count < 0x3FFF { suffixes[suffix] = bytes.count }
                bytes.append(UInt8(labels[index].utf8.count))
                bytes += Array(labels[index].utf8)
            }
            bytes.append(0)
        }

        /// RDLENGTH, then whatever `body` writes.
        mutating func rdata(_ body: (inout Writer) -> Void) {
            let lengthAt = bytes.count
            u16(0)
            body(&self)
            let length = bytes.count - lengthAt - 2
            bytes[lengthAt] = UInt8(length >> 8)
            bytes[lengthAt + 1] = UInt8(length & 0xff)
        }
    }
}

/// RFC 4648 section 5 base64url, decoded strictly: RFC 8484 section 4.1 says `dns=` has no padding.
public enum FakeBase64URL {
    public static func decode(_ text: String) -> [UInt8]? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var values: [UInt8] = []
        for byte in text.utf8 {
            guard let index = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt8(index))
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let padded = Array(chunk) + [UInt8](repeating: 0, count: 4 - chunk.count)
            let triple = UInt32(padded[0]) << 18 | UInt32(padded[1]) << 12 | UInt32(padded[2]) << 6 | UInt32(padded[3])
            let all = [UInt8(triple >> 16), UInt8((triple >> 8) & 0xff), UInt8(triple & 0xff)]
            out += all.prefix(chunk.count - 1)
            index += 4
        }
        return out
    }
}

/// Answer bodies of the text and JSON upstream kinds.
public enum FakeUpstreamBodies {
    /// Tencent's plain text: `ip;ip,TTL`; for `type=addrs` `v4;v4,TTL-v6;v6,TTL`, with `0`
    /// standing for a family without addresses; empty when the host has no answer at all.
    public static func tencent(v4: [String], v6: [String], ttl: Int, type: String?, clientIP: String? = nil) -> String {
        func part(_ list: [String]) -> String { (list.isEmpty ? "0" : list.joined(separator: ";")) + ",\(ttl)" }
        var text: String
        switch type {
        case "aaaa": text = v6.isEmpty ? "" : part(v6)
        case "addrs": text = v4.isEmpty && v6.isEmpty ? "" : part(v4) + "-" + part(v6)
        default: text = v4.isEmpty ? "" : part(v4)
        }
        if let clientIP, !text.isEmpty { text += "|" + clientIP }
        return text
    }

    /// The `application/dns-json` shape (Google/Cloudflare): Status, Question, Answer rows in order.
    public static func dohJSON(name: String, type: Int, rcode: Int, answers: [FakeDNSRecord]) -> String {
        var object: JSONObject = [
            "Status": .int(rcode), "TC": false, "RD": true, "RA": true, "AD": false, "CD": false,
            "Question": [["name": .string(name + "."), "type": .int(type)]],
        ]
        if !answers.isEmpty {
            object.append(
                "Answer",
                .array(
                    answers.map { record in
                        [
                            "name": .string(FakeDNSZone.normalized(record.name) + "."), "type": .int(Int(record.type)),
                            "TTL": .int(Int(record.ttl)), "data": .string(record.jsonData),
                        ]
                    }))
        }
        return JSON.object(object).encodedString
    }
}

extension FakeHTTPServer {
    /// A fake of Tencent's `/d?dn=HOST&ttl=1[&type=aaaa|addrs]`. `override` may take a request over
    /// (for failure modes); otherwise hosts in `answers` get their addresses and others an empty body.
    public static func tencent(
        answers: [String: (v4: [String], v6: [String], ttl: Int)],
        override: (@Sendable (FakeHTTPRequest) -> FakeHTTPAction?)? = nil
    ) throws(SystemError) -> FakeHTTPServer {
        try FakeHTTPServer { request in
            if let action = override?(request) { return action }
            guard request.path == "/d", let host = request.queryValue("dn") else { return .text("", status: 404) }
            guard let answer = answers[host] else { return .text("") }
            return .text(
                FakeUpstreamBodies.tencent(
                    v4: answer.v4, v6: answer.v6, ttl: answer.ttl, type: request.queryValue("type")))
        }
    }

    /// A fake `application/dns-json` resolver answering `?name=&type=` from `zone`.
    public static func dohJSON(
        zone: FakeDNSZone, override: (@Sendable (FakeHTTPRequest) -> FakeHTTPAction?)? = nil
    ) throws(SystemError) -> FakeHTTPServer {
        try FakeHTTPServer { request in
            if let action = override?(request) { return action }
            guard let name = request.queryValue("name"), let type = request.queryValue("type").flatMap({ Int($0) })
            else {
                return .json(#"{"Status":1}"#, status: 400)
            }
            let (rcode, answers) = zone.answer(name: name, type: UInt16(clamping: type))
            let body = FakeUpstreamBodies.dohJSON(name: name, type: type, rcode: Int(rcode), answers: answers)
            return .respond(status: 200, headers: [("Content-Type", "application/dns-json")], body: Array(body.utf8))
        }
    }

    /// A fake RFC 8484 resolver: GET `?dns=` (base64url, no padding) or POST with the query as body;
    /// it decodes the question and answers it from `zone`. An undecodable query gets HTTP 400.
    public static func doh(
        zone: FakeDNSZone, negativeTTL: UInt32 = 30,
        override: (@Sendable (FakeHTTPRequest, FakeDNSQuestion) -> FakeHTTPAction?)? = nil
    ) throws(SystemError) -> FakeHTTPServer {
        try FakeHTTPServer { request in
            let queryBytes =
                request.method == "POST" ? request.body : request.queryValue("dns").flatMap(FakeBase64URL.decode)
            guard let queryBytes, let question = FakeDNSWire.parseQuery(queryBytes) else {
                return .respond(status: 400, headers: [], body: [])
            }
            if let action = override?(request, question) { return action }
            let (rcode, answers) = zone.answer(name: question.name, type: question.type)
            let body = FakeDNSWire.response(
                to: question, rcode: rcode, answers: answers, negativeTTL: answers.isEmpty ? negativeTTL : nil)
            return .dnsMessage(body)
        }
    }
}

extension FakeHTTPAction {
    /// A 200 answer with an `application/dns-message` body.
    public static func dnsMessage(_ body: [UInt8]) -> FakeHTTPAction {
        .respond(status: 200, headers: [("Content-Type", "application/dns-message")], body: body)
    }
}
