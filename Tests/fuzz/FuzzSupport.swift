// Small writers the targets need for their round trips, where the project has no writer of its own.

/// A Unix time split into the proleptic Gregorian calendar (UTC).
struct CalendarDate {
    var year: Int
    var month: Int
    var day: Int
    var weekday: Int
    var hour: Int
    var minute: Int
    var second: Int

    init(unixSeconds: Int64) {
        let days = Int((unixSeconds - ((unixSeconds % 86_400) + 86_400) % 86_400) / 86_400)
        let secondOfDay = Int(unixSeconds - Int64(days) * 86_400)
        // Howard Hinnant's civil_from_days, the inverse of CookieDate.daysFromCivil.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (4; Sunday is 0)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private var time: String { "\(Self.pad(hour, 2)):\(Self.pad(minute, 2)):\(Self.pad(second, 2))" }

    /// RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    var imfFixdate: String {
        "\(Self.weekdays[weekday]), \(Self.pad(day, 2)) \(Self.months[month - 1]) \(Self.pad(year, 4)) \(time) GMT"
    }

    /// RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`.
    var rfc850: String {
        "\(Self.longWeekdays[weekday]), \(Self.pad(day, 2))-\(Self.months[month - 1])-\(Self.pad(year % 100, 2)) \(time) GMT"
    }

    /// C's asctime: `Sun Nov  6 08:49:37 1994`.
    var asctime: String {
        let paddedDay = day < 10 ? " \(day)" : "\(day)"
        return "\(Self.weekdays[weekday]) \(Self.months[month - 1]) \(paddedDay) \(time) \(Self.pad(year, 4))"
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// `seconds` as an IMF-fixdate.
func imfFixdate(_ seconds: Int64) -> String {
    CalendarDate(unixSeconds: seconds).imfFixdate
}
