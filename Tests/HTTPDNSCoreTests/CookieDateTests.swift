import HTTPDNSCore
import Testing

/// RFC 6265bis section 5.1.1, the cookie-date algorithm.
struct CookieDateTests {
    /// 1994-11-06T08:49:37Z, the date of the RFC 9110 / RFC 6265 examples.
    static let example: Int64 = 784_111_777

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // RFC 1123
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850, two-digit year
        "Sun Nov  6 08:49:37 1994",  // asctime
        "06 Nov 1994 08:49:37",  // no weekday, no zone
        "08:49:37 1994 Nov 06",  // any order
        "Sun, 06-Nov-1994 08:49:37 GMT",  // hyphens are delimiters
        "sun, 06 NOVEMBER 1994 08:49:37 UTC",  // month by its first three letters, any case
        "Sun,06 Nov 1994 8:49:37GMT",  // one-digit hour, zone glued to the time
    ])
    func threeFormsAndVariants(_ text: String) {
        #expect(CookieDate.parse(text) == Self.example)
    }

    @Test func sixtyFiveBisExample() {
        #expect(CookieDate.parse("Wed, 09 Jun 2021 10:18:14 GMT") == 1_623_233_894)
    }

    @Test func twoDigitYears() {
        // 70-99 -> 1970-1999, 00-69 -> 2000-2069.
        #expect(CookieDate.parse("Thu, 01 Jan 70 00:00:00 GMT") == 0)
        #expect(CookieDate.parse("Fri, 31 Dec 99 23:59:59 GMT") == 946_684_799)
        #expect(CookieDate.parse("Tue, 01 Jan 69 00:00:00 GMT") == 3_124_224_000)
        #expect(CookieDate.parse("Sat, 01 Jan 00 00:00:00 GMT") == 946_684_800)
    }

    @Test func bounds() {
        #expect(CookieDate.parse("01 Jan 1601 00:00:00") == -11_644_473_600)
        #expect(CookieDate.parse("31 Dec 9999 23:59:59") == 253_402_300_799)
        #expect(CookieDate.parse("29 Feb 2024 12:00:00") == 1_709_208_000)
    }

    @Test(arguments: [
        "31 Dec 1600 23:59:59",  // year below 1601
        "00 Jan 2020 00:00:00",  // day 0
        "32 Jan 2020 00:00:00",  // day 32
        "31 Apr 2020 00:00:00",  // no such date
        "29 Feb 2023 00:00:00",  // not a leap year
        "01 Jan 2020 24:00:00",  // hour 24
        "01 Jan 2020 00:60:00",  // minute 60
        "01 Jan 2020 00:00:60",  // no leap seconds
        "01 Jan 2020",  // no time
        "Jan 2020 00:00:00",  // no day
        "01 2020 00:00:00",  // no month
        "01 Jan 00:00:00",  // no year
        "01 Jan 20201 00:00:00",  // five-digit year is no year
        "01 Jan 2020 000:00:00",  // three-digit time field
        "", "garbage", "2020-01-01T00:00:00Z",
    ])
    func failures(_ text: String) {
        #expect(CookieDate.parse(text) == nil)
    }
}
