import HTTPDNSCore
import Testing

/// `/etc/subuid` read as newuidmap reads it (subuid(5)): owners by name or uid, ranges of
/// subordinate uids charged to them.
@Suite struct SubordinateIDsTests {
    static let text = """
        # adduser's entries
        alice:100000:65536
        1001:165536:65536
        bob:231072:65536
        nobody-known:296608:65536
        broken line
        carol:x:10
        dave:400000:0
          eve:500000:10
        wrap:4294967290:10

        """

    static func uid(_ name: String) -> UInt32? { ["alice": 1000, "bob": 1002, "eve": 1003, "wrap": 1004][name] }

    @Test func eachRangeBelongsToItsOwner() {
        let ids = SubordinateIDs(parsing: Self.text, uidOfName: Self.uid)
        #expect(ids.account(of: 100_000) == 1000)
        #expect(ids.account(of: 165_535) == 1000)
        #expect(ids.account(of: 165_536) == 1001, "an owner given as a uid")
        #expect(ids.account(of: 231_071) == 1001)
        #expect(ids.account(of: 231_072) == 1002)
        #expect(ids.account(of: 500_009) == 1003, "leading blanks are skipped")
    }

    @Test func uidsOutsideEveryRangeAreTheirOwn() {
        let ids = SubordinateIDs(parsing: Self.text, uidOfName: Self.uid)
        #expect(ids.account(of: 0) == 0)
        #expect(ids.account(of: 1000) == 1000)
        #expect(ids.account(of: 99_999) == 99_999)
        #expect(ids.account(of: 296_608) == 296_608, "an owner with no account is skipped")
        #expect(ids.account(of: 400_000) == 400_000, "an empty range holds nothing")
        #expect(ids.account(of: 500_010) == 500_010)
        #expect(ids.account(of: 4_294_967_295) == 4_294_967_295, "a range past the last uid is skipped")
        #expect(SubordinateIDs().account(of: 100_000) == 100_000)
    }

    /// Overlapping ranges (an administrator's mistake): the one that starts first wins, and a
    /// long range still covers uids after a shorter one that starts later.
    @Test func overlappingRangesResolveToTheEarliest() {
        let ids = SubordinateIDs(parsing: "alice:100000:100000\nbob:120000:10\n", uidOfName: Self.uid)
        #expect(ids.account(of: 120_005) == 1000)
        #expect(ids.account(of: 150_000) == 1000)
        #expect(ids.account(of: 199_999) == 1000)
        #expect(ids.account(of: 200_000) == 200_000)
    }
}
