import HTTPDNSCore
import Testing

struct IPAddressTests {
    @Test(arguments: [
        ("0.0.0.0", [0, 0, 0, 0]),
        ("255.255.255.255", [255, 255, 255, 255]),
        ("192.0.2.1", [192, 0, 2, 1]),
        ("10.0.100.9", [10, 0, 100, 9]),
    ])
    func parsesDottedQuad(text: String, bytes: [UInt8]) throws {
        let address = try #require(IPAddress(text))
        #expect(address.family == .ipv4)
        #expect(address.bytes == bytes)
        #expect(address.description == text)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "01.2.3.4", "1.2.3.04", "00.1.1.1", "0x7f.0.0.1",
        "1.2.3.4 ", " 1.2.3.4", "1..3.4", "1.2.3.", ".1.2.3", "-1.2.3.4", "1.2.3.1000", "127.1", "2130706433",
        "1.2.3.4/24", "\u{0661}.2.3.4", "1.2.3.4\n",
    ])
    func rejectsNonStrictIPv4(text: String) {
        #expect(IPAddress(ipv4: text) == nil)
        #expect(IPAddress(text) == nil)
    }

    /// Expected outputs are the examples of RFC 5952 sections 4 and 5.
    @Test(arguments: [
        ("2001:0db8::0001", "2001:db8::1"),
        ("2001:db8:0:0:0:0:2:1", "2001:db8::2:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
        ("0:0:0:0:0:FFFF:C000:0201", "::ffff:192.0.2.1"),
        ("::", "::"),
        ("::1", "::1"),
        ("1::", "1::"),
        ("0:0:0:0:0:0:0:0", "::"),
        ("::13.1.68.3", "::d01:4403"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
        ("2400:3200:1300:0:0:0:0:1", "2400:3200:1300::1"),
        ("1:0:0:2:0:0:0:0", "1:0:0:2::"),
        ("0:0:1:2:3:4:5:6", "::1:2:3:4:5:6"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
        ("fe80::1:2", "fe80::1:2"),
    ])
    func formatsIPv6Canonically(text: String, canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.family == .ipv6)
        #expect(address.bytes.count == 16)
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address)
    }

    @Test(arguments: [
        "fe80::1%eth0", ":::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", "12345::", "1:2:3:4:5:6:7:8::",
        "::1.2.3", "1.2.3.4::", "::1.2.3.4:1", "g::1", ":1::2", "1::2:", "[::1]", "::ffff:01.2.3.4", "1:2", "",
        ":", "1:2:3:4:5:6:7:1.2.3.4", " ::1",
    ])
    func rejectsInvalidIPv6(text: String) {
        #expect(IPAddress(ipv6: text) == nil)
        #expect(IPAddress(text) == nil)
    }

    /// The longest text form parses; anything longer is refused before it is split, however
    /// its groups look.
    @Test func anIPv6TextLongerThanTheLongestFormIsRefused() {
        let longest = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"
        #expect(longest.utf8.count == 45)
        #expect(IPAddress(longest)?.description == "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
        #expect(IPAddress(ipv6: longest) != nil)
        for text in ["0" + longest, String(repeating: "0:", count: 50_000) + ":"] {
            #expect(IPAddress(text) == nil)
            #expect(IPAddress(ipv6: text) == nil)
        }
    }

    @Test func buildsFromWireBytes() throws {
        let v4 = try #require(IPAddress(bytes: [93, 184, 216, 34]))
        #expect(v4.family == .ipv4)
        #expect(v4.description == "93.184.216.34")
        let v6 = try #require(IPAddress(bytes: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]))
        #expect(v6.description == "2001:db8::1")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: []) == nil)
        #expect(IPAddress(bytes: Array(repeating: 0, count: 17)) == nil)
    }

    /// `::ffff:a.b.c.d` reaches the IPv4 host a.b.c.d; other IPv6 addresses stay themselves.
    /// Every byte value in every place, written as decimal without leading zeros, in both the
    /// IPv4 form and the IPv4-mapped IPv6 form.
    @Test func dottedDecimalForEveryByteValue() throws {
        for value in 0...255 {
            for place in 0..<4 {
                var bytes: [UInt8] = [1, 20, 255, 9]
                bytes[place] = UInt8(value)
                let expected = bytes.map { String($0) }.joined(separator: ".")
                let v4 = try #require(IPAddress(bytes: bytes))
                #expect(v4.description == expected)
                let mapped = try #require(IPAddress(bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + bytes))
                #expect(mapped.description == "::ffff:" + expected)
                #expect(IPAddress(expected)?.description == expected)
            }
        }
    }

    @Test func anIPv4MappedAddressUnmapsToItsIPv4Address() throws {
        let mapped = try #require(IPAddress("::FFFF:203.0.113.10"))
        #expect(mapped.family == .ipv6)
        #expect(mapped.unmappingIPv4 == IPAddress("203.0.113.10"))
        #expect(try #require(IPAddress("::ffff:cb00:710a")).unmappingIPv4.description == "203.0.113.10")
        for text in ["2001:db8::1", "::203.0.113.10", "64:ff9b::203.0.113.10", "::fffe:203.0.113.10", "192.0.2.1"] {
            let address = try #require(IPAddress(text))
            #expect(address.unmappingIPv4 == address, "\(text)")
        }
    }

    @Test func equalAddressesHashAlike() {
        let set: Set<IPAddress?> = [IPAddress("2001:DB8::1"), IPAddress("2001:db8:0:0::1"), IPAddress("2001:db8::0:1")]
        #expect(set.count == 1)
        #expect(IPAddress("1.2.3.4") != IPAddress("::ffff:1.2.3.4"))
    }
}
