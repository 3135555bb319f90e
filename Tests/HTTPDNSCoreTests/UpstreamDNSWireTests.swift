import HTTPDNSCore
import Testing

/// Builds DNS messages by hand, byte by byte, so the tests follow RFC 1035 section 4 and not the parser.
struct WireBuilder {
    var bytes: [UInt8] = []

    init(id: UInt16 = 0, flags: UInt16 = 0x8180, qd: UInt16 = 1, an: UInt16 = 0, ns: UInt16 = 0, ar: UInt16 = 0) {
        for value in [id, flags, qd, an, ns, ar] { u16(value) }
    }

    var offset: Int { bytes.count }

    mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xff)] }
    mutating func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xffff)) }

    /// Uncompressed labels, ending with the root label unless `pointer` finishes the name.
    mutating func name(_ dotted: String, pointer: Int? = nil) {
        for label in dotted.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += Array(label.utf8)
        }
        if let pointer { self.pointer(pointer) } else { bytes.append(0) }
    }

    mutating func pointer(_ target: Int) { u16(0xc000 | UInt16(target)) }

    mutating func question(_ dotted: String, type: UInt16) {
        name(dotted)
        u16(type)
        u16(1)
    }

    /// A record header after its owner name, then the RDATA.
    mutating func record(type: UInt16, ttl: UInt32, rdata: [UInt8], rrClass: UInt16 = 1) {
        u16(type)
        u16(rrClass)
        u32(ttl)
        u16(UInt16(rdata.count))
        bytes += rdata
    }
}

private func addresses(_ texts: [String]) -> [IPAddress] { texts.compactMap { IPAddress($0) } }

private func isMalformed(_ result: Result<UpstreamAnswer, UpstreamError>) -> Bool {
    if case .failure(let error) = result, case .malformed = error.code { return true }
    return false
}

struct DNSWireTests {
    /// RFC 8484 section 4.1.1: the GET example for www.example.com A with ID 0.
    @Test func queryMatchesRFC8484Example() throws {
        let query = try #require(DNSWire.makeQuery(host: "www.example.com", type: .a))
        #expect(Base64URL.encode(query) == "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB")
        let aaaa = try #require(DNSWire.makeQuery(host: "WWW.Example.com.", type: .aaaa))
        #expect(Array(aaaa.suffix(4)) == [0, 28, 0, 1])
        #expect(Array(aaaa[13..<16]) == Array("www".utf8))
    }

    @Test func queryRejectsUnencodableNames() {
        #expect(DNSWire.makeQuery(host: "", type: .a) == nil)
        #expect(DNSWire.makeQuery(host: "a..b", type: .a) == nil)
        #expect(DNSWire.makeQuery(host: String(repeating: "a", count: 64) + ".com", type: .a) == nil)
        let long = Array(repeating: String(repeating: "a", count: 63), count: 4).joined(separator: ".")
        #expect(DNSWire.makeQuery(host: long, type: .a) == nil)
    }

    /// RFC 4648 section 10 vectors, in the URL alphabet and without padding.
    @Test func base64URL() {
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors { #expect(Base64URL.encode(Array(plain.utf8)) == encoded) }
        #expect(Base64URL.encode([0xfb, 0xff, 0xfe]) == "-__-")
    }

    @Test func getAndPostRequests() throws {
        let get = try #require(
            DoHWire(baseURL: "https://dns.example/dns-query").request(host: "www.example.com", type: .a))
        #expect(get.method == .get)
        #expect(get.url == "https://dns.example/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB")
        #expect(get.headers.contains(UpstreamHeader("Accept", "application/dns-message")))
        let post = try #require(
            DoHWire(baseURL: "https://dns.example/dns-query", method: .post).request(host: "www.example.com", type: .a))
        #expect(post.method == .post)
        #expect(post.url == "https://dns.example/dns-query")
        #expect(post.body == DNSWire.makeQuery(host: "www.example.com", type: .a))
        #expect(post.headers.contains(UpstreamHeader("Content-Type", "application/dns-message")))
    }

    @Test func compressedAnswer() {
        var m = WireBuilder(an: 2)
        m.question("www.example.com", type: 1)
        m.pointer(12)
        m.record(type: 1, ttl: 300, rdata: [93, 184, 216, 34])
        m.pointer(12)
        m.record(type: 1, ttl: 120, rdata: [93, 184, 216, 35])
        #expect(
            DNSWire.parseResponse(m.bytes, host: "www.example.com", type: .a)
                == .success(UpstreamAnswer(ipv4: addresses(["93.184.216.34", "93.184.216.35"]), ttl: 120)))
    }

    /// www.example.com CNAME cdn.example.net (compressed into the question) CNAME edge.example.net AAAA.
    @Test func followsCNAMEChainWithMinimumTTL() {
        var m = WireBuilder(an: 5)
        m.question("www.example.com", type: 28)
        // An unrelated AAAA that must not be taken: it is not on the chain.
        m.name("evil.example.org")
        m.record(type: 28, ttl: 999, rdata: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x66])
        m.pointer(12)
        let cdnRData = m.offset + 10
        var cdn = WireBuilder()
        cdn.bytes = []
        cdn.name("cdn.example.net")
        m.record(type: 5, ttl: 600, rdata: cdn.bytes)
        // "edge" + pointer to "example.net" inside the previous CNAME's RDATA.
        var edge = WireBuilder()
        edge.bytes = []
        edge.name("edge", pointer: cdnRData + 4)
        m.pointer(cdnRData)
        m.record(type: 5, ttl: 50, rdata: edge.bytes)
        m.pointer(cdnRData)
        m.record(type: 28, ttl: 999, rdata: Array(repeating: 0xff, count: 16))  // AAAA of the middle name: skipped
        m.name("EDGE", pointer: cdnRData + 4)
        m.record(type: 28, ttl: 80, rdata: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1])
        #expect(
            DNSWire.parseResponse(m.bytes, host: "WWW.example.com", type: .aaaa)
                == .success(UpstreamAnswer(ipv6: addresses(["2001:db8::1"]), ttl: 50)))
    }

    @Test func nxdomainUsesSOAMinimum() {
        var m = WireBuilder(flags: 0x8183, ns: 1)
        m.question("nope.example.com", type: 1)
        m.pointer(12 + 5)  // example.com
        var soa = WireBuilder()
        soa.bytes = []
        soa.name("ns1", pointer: 12 + 5)
        soa.name("hostmaster", pointer: 12 + 5)
        for value: UInt32 in [2024010101, 7200, 3600, 1209600] { soa.u32(value) }
        soa.u32(300)  // MINIMUM
        m.record(type: 6, ttl: 3600, rdata: soa.bytes)
        #expect(
            DNSWire.parseResponse(m.bytes, host: "nope.example.com", type: .a)
                == .success(UpstreamAnswer(ttl: 300, nameExists: false)))
    }

    @Test func nodataIsAnEmptyAnswer() throws {
        var m = WireBuilder()
        m.question("v4only.example", type: 28)
        let answer = try DNSWire.parseResponse(m.bytes, host: "v4only.example", type: .aaaa).get()
        #expect(answer.isEmpty)
        #expect(answer.nameExists)
    }

    @Test func truncationAndErrorCodes() {
        var tc = WireBuilder(flags: 0x8380)
        tc.question("a.com", type: 1)
        #expect(DNSWire.parseResponse(tc.bytes, host: "a.com", type: .a) == .failure(UpstreamError(.truncated)))
        var servfail = WireBuilder(flags: 0x8182)
        servfail.question("a.com", type: 1)
        #expect(
            DNSWire.parseResponse(servfail.bytes, host: "a.com", type: .a)
                == .failure(UpstreamError(.dnsStatus(2))))
        var refused = WireBuilder(flags: 0x8185)
        refused.question("a.com", type: 1)
        #expect(
            DNSWire.parseResponse(refused.bytes, host: "a.com", type: .a)
                == .failure(UpstreamError(.dnsStatus(5))))
    }

    @Test func rejectsQueriesAndMismatchedQuestions() {
        var query = WireBuilder(flags: 0x0100)
        query.question("a.com", type: 1)
        #expect(isMalformed(DNSWire.parseResponse(query.bytes, host: "a.com", type: .a)))
        var other = WireBuilder()
        other.question("b.com", type: 1)
        #expect(isMalformed(DNSWire.parseResponse(other.bytes, host: "a.com", type: .a)))
        var otherType = WireBuilder()
        otherType.question("a.com", type: 28)
        #expect(isMalformed(DNSWire.parseResponse(otherType.bytes, host: "a.com", type: .a)))
    }

    @Test func pointerLoopsTerminate() {
        // The answer's owner is a pointer to itself.
        var selfLoop = WireBuilder(an: 1)
        selfLoop.question("a.com", type: 1)
        selfLoop.pointer(selfLoop.offset)
        selfLoop.record(type: 1, ttl: 1, rdata: [1, 2, 3, 4])
        #expect(isMalformed(DNSWire.parseResponse(selfLoop.bytes, host: "a.com", type: .a)))

        // Two labels that point at each other: x -> y -> x.
        var cycle = WireBuilder(an: 1)
        cycle.question("a.com", type: 1)
        let first = cycle.offset
        cycle.bytes += [1, UInt8(ascii: "x")]
        cycle.pointer(first + 4)
        cycle.bytes += [1, UInt8(ascii: "y")]
        cycle.pointer(first)
        cycle.record(type: 1, ttl: 1, rdata: [1, 2, 3, 4])
        #expect(isMalformed(DNSWire.parseResponse(cycle.bytes, host: "a.com", type: .a)))

        // A pointer past the end of the message.
        var outOfRange = WireBuilder(an: 1)
        outOfRange.question("a.com", type: 1)
        outOfRange.pointer(0x3fff)
        outOfRange.record(type: 1, ttl: 1, rdata: [1, 2, 3, 4])
        #expect(isMalformed(DNSWire.parseResponse(outOfRange.bytes, host: "a.com", type: .a)))
    }

    /// A CNAME loop is the zone's doing (its owner can publish one): the name's failure.
    @Test func aCNAMELoopIsTheNamesFailure() {
        var m = WireBuilder(an: 2)
        m.question("a.com", type: 1)
        var b = WireBuilder()
        b.bytes = []
        b.name("b.com")
        m.pointer(12)
        m.record(type: 5, ttl: 5, rdata: b.bytes)
        m.name("b.com")
        var a = WireBuilder()
        a.bytes = []
        a.name("a.com")
        m.record(type: 5, ttl: 5, rdata: a.bytes)
        let result = DNSWire.parseResponse(m.bytes, host: "a.com", type: .a)
        #expect(result == .failure(UpstreamError(.unusableChain("CNAME loop"))))
        #expect((try? result.get()) == nil && UpstreamError(.unusableChain("CNAME loop")).isNameLevel)
    }

    @Test func everyTruncatedPrefixFailsCleanly() {
        var m = WireBuilder(an: 1)
        m.question("www.example.com", type: 1)
        m.pointer(12)
        m.record(type: 1, ttl: 300, rdata: [192, 0, 2, 1])
        #expect((try? DNSWire.parseResponse(m.bytes, host: "www.example.com", type: .a).get()) != nil)
        for length in 0..<m.bytes.count {
            let prefix = Array(m.bytes[..<length])
            guard case .failure = DNSWire.parseResponse(prefix, host: "www.example.com", type: .a) else {
                Issue.record("a message cut at \(length) bytes must fail")
                continue
            }
        }
    }

    @Test func badRDataLengthAndTTLRules() {
        var wrongLength = WireBuilder(an: 1)
        wrongLength.question("a.com", type: 1)
        wrongLength.pointer(12)
        wrongLength.record(type: 1, ttl: 1, rdata: [1, 2, 3, 4, 5])
        #expect(isMalformed(DNSWire.parseResponse(wrongLength.bytes, host: "a.com", type: .a)))

        // RFC 2181 section 8: a TTL with the most significant bit set is zero.
        var highBit = WireBuilder(an: 1)
        highBit.question("a.com", type: 1)
        highBit.pointer(12)
        highBit.record(type: 1, ttl: 0x8000_0001, rdata: [1, 2, 3, 4])
        #expect(
            DNSWire.parseResponse(highBit.bytes, host: "a.com", type: .a)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4"]), ttl: 0)))

        // Class CH records are not Internet addresses.
        var chaos = WireBuilder(an: 1)
        chaos.question("a.com", type: 1)
        chaos.pointer(12)
        chaos.record(type: 1, ttl: 1, rdata: [1, 2, 3, 4], rrClass: 3)
        #expect((try? DNSWire.parseResponse(chaos.bytes, host: "a.com", type: .a).get())?.isEmpty == true)
    }

    @Test func httpStatusComesFirst() {
        #expect(
            DoHWire.parse(status: 415, body: [], host: "a.com", type: .a) == .failure(UpstreamError(.httpStatus(415))))
    }
}
