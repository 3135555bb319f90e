import Testing

@testable import HTTPDNSURL

/// Each fast-lane mask against the percent-encode set it is read from (`PercentEncoding.EncodeSet`,
/// which the WPT data holds to the standard), for every byte.
@Suite struct ASCIIByteSetTests {
    private static func members(_ set: ASCIIByteSet) -> [UInt8] { (0...255).map(UInt8.init).filter(set.contains) }

    private static func members(where predicate: (UInt8) -> Bool) -> [UInt8] {
        (0...255).map(UInt8.init).filter(predicate)
    }

    @Test func theHostSetIsLowercaseLettersDigitsHyphenAndUnderscore() {
        let expected = Self.members { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_")
        }
        #expect(Self.members(.plainHostByte) == expected)
    }

    @Test func thePathSetLeavesOutThePathSetTheSeparatorsAndPercent() {
        let expected = Self.members { !PercentEncoding.EncodeSet.path.contains($0) && !Array("/\\%".utf8).contains($0) }
        #expect(Self.members(.plainPathByte) == expected)
    }

    @Test func theQuerySetLeavesOutTheSpecialQuerySet() {
        #expect(Self.members(.plainQueryByte) == Self.members { !PercentEncoding.EncodeSet.specialQuery.contains($0) })
        #expect(!ASCIIByteSet.plainQueryByte.contains(UInt8(ascii: "#")))
    }

    @Test func theFragmentSetLeavesOutTheFragmentSet() {
        #expect(Self.members(.plainFragmentByte) == Self.members { !PercentEncoding.EncodeSet.fragment.contains($0) })
    }

    @Test func noByteOutsidePrintableASCIIIsInAnySet() {
        let outside = (0...255).map(UInt8.init).filter { $0 <= 0x20 || $0 >= 0x7F }
        for set in [ASCIIByteSet.plainHostByte, .plainPathByte, .plainQueryByte, .plainFragmentByte] {
            #expect(outside.allSatisfy { !set.contains($0) })
        }
    }
}
