/// The cookie-date algorithm of RFC 6265bis section 5.1.1, and the calendar arithmetic
/// that turns its result into Unix seconds.
public enum CookieDate {
    /// Parses a cookie-date into Unix seconds (UTC), or returns nil where the algorithm says
    /// "fail to parse". Accepts RFC 1123, RFC 850 and asctime forms and their many variants.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// One pass over the bytes that allocates nothing: a Set-Cookie line may carry a megabyte of
    /// Expires= attributes, each parsed on the loop thread.
    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var time: (hour: Int, minute: Int, second: Int)?
        var dayOfMonth: Int?
        var month: Int?
        var year: Int?

        var index = 0
        while index < bytes.count {
            while index < bytes.count, isDelimiter(bytes[index]) { index += 1 }
            let start = index
            while index < bytes.count, !isDelimiter(bytes[index]) { index += 1 }
            guard start < index else { break }
            let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
            if time == nil, let parsed = parseTime(token) {
                time = parsed
            } else if dayOfMonth == nil, let parsed = parseDigits(token, minimum: 1, maximum: 2) {
                dayOfMonth = parsed
            } else if month == nil, let parsed = parseMonth(token) {
                month = parsed
            } else if year == nil, let parsed = parseDigits(token, minimum: 2, maximum: 4) {
                year = parsed
            }
        }
        guard let time, let dayOfMonth, let month, var year else { return nil }
        if year >= 70 && year <= 99 { year += 1900 }
        if year >= 0 && year <= 69 { year += 2000 }
        guard dayOfMonth >= 1, dayOfMonth <= 31, year >= 1601,
            time.hour <= 23, time.minute <= 59, time.second <= 59
        else { return nil }
        // Step 6: the date must exist (no 31 April, no 29 February 2023).
        guard dayOfMonth <= daysInMonth(month, year: year) else { return nil }
        let days = daysFromCivil(year: year, month: month, day: dayOfMonth)
        return Int64(days) * 86_400 + Int64(time.hour * 3600 + time.minute * 60 + time.second)
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x20...0x2F, 0x3B...0x40, 0x5B...0x60, 0x7B...0x7E: return true
        default: return false
        }
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `minimum`...`maximum` DIGITs, then either the end or a non-digit and anything.
    /// (day-of-month = 1*2DIGIT ( non-digit *OCTET ); year = 2*4DIGIT ( non-digit *OCTET ))
    static func parseDigits(_ token: UnsafeBufferPointer<UInt8>, minimum: Int, maximum: Int) -> Int? {
        var index = 0
        return digits(token, from: &index, minimum: minimum, maximum: maximum)
    }

    /// `minimum`...`maximum` DIGITs at `index`, which is left after them; nil when fewer or more.
    private static func digits(_ token: UnsafeBufferPointer<UInt8>, from index: inout Int, minimum: Int, maximum: Int)
        -> Int?
    {
        var value = 0
        var count = 0
        while index < token.count, isDigit(token[index]) {
            count += 1
            guard count <= maximum else { return nil }
            value = value * 10 + Int(token[index] - 0x30)
            index += 1
        }
        return count >= minimum ? value : nil
    }

    /// hms-time ( non-digit *OCTET ), where hms-time = time-field ":" time-field ":" time-field
    /// and time-field = 1*2DIGIT.
    static func parseTime(_ token: UnsafeBufferPointer<UInt8>) -> (hour: Int, minute: Int, second: Int)? {
        var index = 0
        func colon() -> Bool {
            guard index < token.count, token[index] == UInt8(ascii: ":") else { return false }
            index += 1
            return true
        }
        guard let hour = digits(token, from: &index, minimum: 1, maximum: 2), colon(),
            let minute = digits(token, from: &index, minimum: 1, maximum: 2), colon(),
            let second = digits(token, from: &index, minimum: 1, maximum: 2)
        else { return nil }
        // Whatever follows must start with a non-digit; the digit loop above guarantees it.
        return (hour, minute, second)
    }

    /// The months' first three letters, lowercase, as one number each.
    private static let monthKeys: [UInt32] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .map { name in name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }

    /// month = ( "jan" / "feb" / ... / "dec" ) *OCTET, case-insensitively.
    static func parseMonth(_ token: UnsafeBufferPointer<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let key = (0..<3).reduce(UInt32(0)) { $0 << 8 | UInt32(asciiLowercased(token[$1])) }
        guard let index = monthKeys.firstIndex(of: key) else { return nil }
        return index + 1
    }

    static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's
    /// days_from_civil algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
