import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Every parser, fed random and mutated input: none may trap, and whatever they accept must hold
/// only addresses of the right family.
struct UpstreamFuzzTests {
    private static func checkInvariants(_ result: Result<UpstreamAnswer, UpstreamError>) {
        guard case .success(let answer) = result else { return }
        #expect(answer.ipv4.allSatisfy { $0.family == .ipv4 && $0.bytes.count == 4 })
        #expect(answer.ipv6.allSatisfy { $0.family == .ipv6 && $0.bytes.count == 16 })
        #expect(answer.ttl >= 0)
    }

    private static func seedMessage() -> [UInt8] {
        var m = WireBuilder(an: 2, ns: 1)
        m.question("www.example.com", type: 1)
        m.pointer(12)
        var target = WireBuilder()
        target.bytes = []
        target.name("cdn", pointer: 16)
        m.record(type: 5, ttl: 60, rdata: target.bytes)
        m.name("cdn", pointer: 16)
        m.record(type: 1, ttl: 30, rdata: [192, 0, 2, 1])
        m.pointer(16)
        m.record(type: 6, ttl: 30, rdata: [0xc0, 16, 0xc0, 16] + Array(repeating: 1, count: 20))
        return m.bytes
    }

    @Test func dnsWireNeverTraps() {
        var random = SeededGenerator(state: 8484)
        let seed = UpstreamFuzzTests.seedMessage()
        #expect((try? DNSWire.parseResponse(seed, host: "www.example.com", type: .a).get())?.ipv4.count == 1)
        for round in 0..<20_000 {
            var input: [UInt8]
            if round % 2 == 0 {
                input = seed
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    let index = Int.random(in: 0..<input.count, using: &random)
                    input[index] = UInt8.random(in: 0...255, using: &random)
                }
                if Bool.random(using: &random) {
                    input.removeLast(Int.random(in: 0..<input.count, using: &random))
                }
            } else {
                input = (0..<Int.random(in: 0...200, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                if input.count > 3 { input[2] |= 0x80 }  // mostly responses, to get past the header checks
            }
            UpstreamFuzzTests.checkInvariants(DNSWire.parseResponse(input, host: "www.example.com", type: .a))
            UpstreamFuzzTests.checkInvariants(DNSWire.parseResponse(input, host: "cdn.example.com", type: .aaaa))
        }
    }

    @Test func textParsersNeverTrap() {
        var random = SeededGenerator(state: 1321)
        let seeds = [
            #"{"host":"a.com","ips":["1.2.3.4"],"ipsv6":["2001:db8::1"],"ttl":57,"origin_ttl":120}"#,
            #"{"dns":[{"host":"a.com","ips":["1.2.3.4"],"ttl":5},{"host":"b.com","ipsv6":["::1"]}]}"#,
            #"{"Status":0,"Answer":[{"name":"a.","type":1,"TTL":5,"data":"1.2.3.4"}]}"#,
            "1.2.3.4;5.6.7.8,120-2001:db8::1;::ffff:1.2.3.4,60|9.9.9.9",
            "fe80::1:2:3.4.5.6",
        ]
        let alphabet = Array(#"{}[]",:0123456789abcdefx.-;|"\ Status ips ttl"#.utf8) + [0, 0xff, 0xc3, 0x0a]
        for round in 0..<20_000 {
            var input = Array(seeds[round % seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let index = Int.random(in: 0...input.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where index < input.count: input.remove(at: index)
                case 1: input.insert(alphabet.randomElement(using: &random)!, at: index)
                default: if index < input.count { input[index] = alphabet.randomElement(using: &random)! }
                }
            }
            let status = [200, 200, 200, 403, 500].randomElement(using: &random)!
            for family in AddressFamily.allCases {
                UpstreamFuzzTests.checkInvariants(AlibabaV1.parseResolve(status: status, body: input, family: family))
                UpstreamFuzzTests.checkInvariants(TencentHTTPDNS.parse(status: status, body: input, family: family))
                if case .success(let answers) = AlibabaV1.parseBatch(status: status, body: input, family: family) {
                    for answer in answers.values { UpstreamFuzzTests.checkInvariants(.success(answer)) }
                }
            }
            UpstreamFuzzTests.checkInvariants(DoHJSON.parse(status: status, body: input, type: .a))
            UpstreamFuzzTests.checkInvariants(DoHJSON.parse(status: status, body: input, type: .aaaa))
            let text = String(decoding: input, as: UTF8.self)
            if let address = IPAddress(text) {
                // Whatever parses must print canonically and parse back to itself.
                #expect(IPAddress(address.description) == address)
            }
            if case .success(let name) = HostName.validate(text) {
                #expect(HostName.validate(name) == .success(name))
            }
        }
    }
}
