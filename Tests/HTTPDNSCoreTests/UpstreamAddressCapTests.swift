import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// Every codec keeps at most `UpstreamAnswer.maxAddressesPerFamily` distinct addresses per
/// family, the first ones in the upstream's order, whatever the size of the list it was sent.
struct UpstreamAddressCapTests {
    static let cap = UpstreamAnswer.maxAddressesPerFamily

    /// `count` distinct IPv4 addresses, 10.0.0.0 upwards.
    static func ipv4(_ count: Int) -> [String] {
        (0..<count).map { "10.\($0 >> 16 & 0xff).\($0 >> 8 & 0xff).\($0 & 0xff)" }
    }

    static func ipv6(_ count: Int) -> [String] {
        (1...count).map { "2001:db8::\(String($0, radix: 16))" }
    }

    @Test func alibabaKeepsTheFirstDistinctAddresses() throws {
        // Duplicates first: they must not use up the cap.
        let v4 = Array(repeating: "10.0.0.0", count: 100) + Self.ipv4(40_000)
        let body = JSON.object([
            "host": "huge.example", "ips": .array(v4.map(JSON.string)),
            "ipsv6": .array(Self.ipv6(40_000).map(JSON.string)), "ttl": 60,
        ]).encodedString
        let answer = try AlibabaV1.parseResolve(status: 200, body: Array(body.utf8), family: .both).get()
        #expect(answer.ipv4.map(\.description) == Self.ipv4(Self.cap))
        #expect(answer.ipv6.map(\.description) == Self.ipv6(Self.cap))
    }

    @Test func tencentAndDoHJSONKeepTheFirstDistinctAddresses() throws {
        let text = Self.ipv4(40_000).joined(separator: ";") + ",60"
        let tencent = try TencentHTTPDNS.parse(status: 200, body: Array(text.utf8), family: .ipv4).get()
        #expect(tencent.ipv4.map(\.description) == Self.ipv4(Self.cap))

        let rows = Self.ipv6(40_000).enumerated().map { index, address -> JSON in
            // The TTL of rows past the cap is not the answer's: only kept addresses count.
            ["name": "huge.example.", "type": 28, "TTL": .int(index < Self.cap ? 300 : 5), "data": .string(address)]
        }
        let body = JSON.object(["Status": 0, "Answer": .array(rows)]).encodedString
        let doh = try DoHJSON.parse(status: 200, body: Array(body.utf8), type: .aaaa).get()
        #expect(doh.ipv6.map(\.description) == Self.ipv6(Self.cap))
        #expect(doh.ttl == 300)
    }

    @Test func dnsWireKeepsTheFirstDistinctAddresses() throws {
        let count = 2_000
        var message = WireBuilder(an: UInt16(count))
        message.question("huge.example", type: 1)
        for index in 0..<count {
            message.pointer(12)
            message.record(type: 1, ttl: 60, rdata: [10, 0, UInt8(index >> 8), UInt8(index & 0xff)])
        }
        let answer = try DNSWire.parseResponse(message.bytes, host: "huge.example", type: .a).get()
        #expect(answer.ipv4.map(\.description) == Self.ipv4(Self.cap))
    }

    /// Joining the A and AAAA halves, or building an answer by hand (the system resolver), caps
    /// and deduplicates too.
    @Test func combinedAndHandBuiltAnswersAreCapped() {
        let many = Self.ipv4(100).compactMap { IPAddress($0) }
        let built = UpstreamAnswer(ipv4: many + many, ipv6: [], ttl: 60)
        #expect(built.ipv4 == Array(many.prefix(Self.cap)))
        let manyV6 = (0..<100).compactMap { IPAddress("2001:db8::\(String($0, radix: 16))") }
        let combined = UpstreamAnswer.combining(ipv4: built, ipv6: UpstreamAnswer(ipv6: manyV6 + manyV6, ttl: 30))
        #expect(combined.ipv4 == Array(many.prefix(Self.cap)))
        #expect(combined.ipv6 == Array(manyV6.prefix(Self.cap)))
        #expect(combined.ttl == 30)
        // An address of the other family never lands in the wrong list.
        #expect(UpstreamAnswer(ipv4: [IPAddress("2001:db8::1")!], ttl: 60).ipv4.isEmpty)
    }
}
