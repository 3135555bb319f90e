import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSCore
@testable import HTTPDNSPSL

/// `HostNameSyntax.isCanonical` lets names that are already canonical skip the IP-literal parses,
/// the syntax checks and libidn2. These tests hold the fast lane against the full path: a name it
/// accepts must come back unchanged from every full check, and the public functions must answer
/// exactly as the full path does, for a corpus of edge cases and for seeded random names.
struct HostNameFastPathTests {
    static let rules = try! PublicSuffixRules()

    static let label63 = String(repeating: "a", count: 63)
    static let corpus: [String] = [
        "", ".", "..", "a", "a.", ".a", "a..b", "example.com", "www.example.com", "Example.com",
        "example.com.", "EXAMPLE.COM.", "_dmarc.example.com", "a_b.example", "a-b.c0", "-a.com", "a-.com",
        "a.-b", "a.b-", "xn--bcher-kva.example", "xn--BCHER-kva.example", "b\u{fc}cher.de", "B\u{dc}CHER.de",
        "\u{1F600}.example", "localhost", "1.2.3.4", "1.2.3.04", "01.2.3.4", "1.2.3", "1.2.3.4.5", "256.1.1.1",
        "1.2.3.a", "a.1.2.3", "123", "0x7f.1", "a.123", "a.12b", "123.a1", "::1", "[::1]", "2001:db8::1",
        "[2001:db8::1]", "::ffff:1.2.3.4", "a b.com", "a/b", "a%2e.com", "a\u{0}.com", "a\nb.com", "a~b.com",
        "a.b.c.d.e.f.g", label63 + ".com", label63 + "a.com", String(repeating: "\(label63).", count: 3) + "ddd",
        [label63, label63, label63, String(repeating: "d", count: 61)].joined(separator: "."),
        [label63, label63, label63, String(repeating: "d", count: 62)].joined(separator: "."),
        [label63, label63, label63, String(repeating: "d", count: 61)].joined(separator: ".") + ".",
        "name7.example", "site141.example", "s-1.x_y.z9",
    ]

    /// The full path as it was before the fast lane: IP literal, else ASCII syntax, else IDNA.
    static func fullCanonicalHost(_ host: String) -> String? {
        if let ip = IPLiteral.canonical(host) { return ip }
        if HostNameSyntax.isASCII(host) { return HostNameSyntax.checkedCanonicalASCII(host) }
        guard !host.utf8.contains(0), let aLabels = PublicSuffixRules.toASCII(host) else { return nil }
        return HostNameSyntax.checkedCanonicalASCII(aLabels)
    }

    /// What the fast lane promises for `name`, checked against each full check.
    static func expectAgreement(_ name: String) {
        #expect(rules.canonicalHost(name) == fullCanonicalHost(name), "canonicalHost(\(name.debugDescription))")
        #expect(
            HostNameSyntax.canonicalASCII(name) == HostNameSyntax.checkedCanonicalASCII(name),
            "canonicalASCII(\(name.debugDescription))")
        guard HostNameSyntax.isCanonical(name) else { return }
        #expect(fullCanonicalHost(name) == name, "full path changes \(name.debugDescription)")
        // libidn2 refuses `--` in a label's third and fourth places outside `xn--` (RFC 5891
        // section 4.2.3.1); an ASCII name never goes through it, on either path.
        if !name.split(separator: ".").contains(where: { $0.dropFirst(2).hasPrefix("--") && !$0.hasPrefix("xn--") }) {
            #expect(PublicSuffixRules.toASCII(name) == name, "libidn2 changes \(name.debugDescription)")
        }
        #expect(HostName.validate(name) == .success(name), "the resolver's validation changes \(name.debugDescription)")
        #expect(IPLiteral.address(name) == nil, "\(name.debugDescription) is an IP literal")
    }

    @Test(arguments: corpus)
    func fastLaneAgreesWithTheFullPath(name: String) {
        Self.expectAgreement(name)
    }

    @Test func theFastLaneTakesTheCommonNames() {
        for name in ["example.com", "name7.example", "_dmarc.example.com", "xn--bcher-kva.example", "a1.b2.c3d"] {
            #expect(HostNameSyntax.isCanonical(name), "\(name)")
        }
        for name in ["Example.com", "example.com.", "1.2.3.4", "a.123", "-a.com", "a-.com", "b\u{fc}cher.de", ""] {
            #expect(!HostNameSyntax.isCanonical(name), "\(name.debugDescription)")
        }
    }

    @Test func seededRandomNamesAgree() {
        var generator = SeededGenerator(state: 0x6E61_6D65_7331)
        // Mostly name-like bytes, so that many random names pass the fast lane and many just miss it.
        let alphabet: [Character] = Array("abcz09-_.") + Array("AZ:[] %\u{fc}") + ["\u{1F600}"]
        for _ in 0..<20_000 {
            var name = ""
            switch generator.next() % 3 {
            case 0:
                let length = Int(generator.next() % 24)
                for _ in 0..<length {
                    let pick = generator.next() % 100
                    name.append(
                        pick < 85 ? alphabet[Int(pick % 9)] : alphabet[Int(generator.next() % UInt64(alphabet.count))])
                }
            case 1:
                // Labels around the length limits.
                let labels = 1 + Int(generator.next() % 5)
                name = (0..<labels).map { _ in
                    String(repeating: "abc9-_"[Int(generator.next() % 6)], count: 1 + Int(generator.next() % 66))
                }.joined(separator: ".")
            default:
                // Dotted numbers and letters: the IPv4 lookalikes.
                let parts = 1 + Int(generator.next() % 5)
                name = (0..<parts).map { _ in
                    generator.next() % 4 == 0 ? "x" + String(generator.next() % 300) : String(generator.next() % 300)
                }.joined(separator: ".")
            }
            Self.expectAgreement(name)
        }
    }
}

extension String {
    fileprivate subscript(offset: Int) -> Character { self[index(startIndex, offsetBy: offset)] }
}
