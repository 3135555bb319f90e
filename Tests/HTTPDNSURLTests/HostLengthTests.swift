import HTTPDNSURL
import Testing

/// A domain that needs IDNA and is longer than any whose A-labels fit DNS is refused before it
/// reaches `toASCII`; within the bound it reaches it. An ASCII domain has no such bound (nor
/// has the URL Standard).
struct HostLengthTests {
    static let anyToASCII: DomainToASCII = { _ in "mapped.example" }

    @Test func aDomainPastTheIDNABoundIsRefusedBeforeToASCII() {
        let within = String(repeating: "ä", count: 506)
        #expect(within.utf8.count == 4 * 253)
        #expect(HTTPURL("https://\(within)/", toASCII: Self.anyToASCII)?.host == .domain("mapped.example"))
        #expect(HTTPURL("https://\(within)ä/", toASCII: Self.anyToASCII) == nil)
        let percentEncoded = String(repeating: "%C3%A4", count: 507)
        #expect(HTTPURL("https://\(percentEncoded)/", toASCII: Self.anyToASCII) == nil)
        let ascii = String(repeating: "a", count: 5_000) + ".example"
        #expect(HTTPURL("https://\(ascii.uppercased())/", toASCII: Self.anyToASCII)?.host == .domain(ascii))
    }
}
