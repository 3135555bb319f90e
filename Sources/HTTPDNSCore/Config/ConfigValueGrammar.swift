/// Time spans as systemd.time(7) writes them: `2s`, `500ms`, `1min`, `1h 30min`, `1.5h`, a bare
/// number meaning seconds. Parsed to whole milliseconds, rounded up so that a positive span never
/// becomes 0 (which several settings read as "never").
public enum ConfigTimeSpan {
    /// Microseconds per unit; the names and lengths (a month is 30.44 days, a year 365.25 days)
    /// are systemd.time(7)'s. Units are case-sensitive there (`M` is a month, `m` a minute).
    static let microsecondsPerUnit: [String: Int64] = {
        var table: [String: Int64] = [:]
        func add(_ names: [String], _ value: Int64) { for name in names { table[name] = value } }
        add(["usec", "us", "\u{B5}s", "\u{3BC}s"], 1)
        add(["msec", "ms"], 1_000)
        add(["seconds", "second", "sec", "s", ""], 1_000_000)
        add(["minutes", "minute", "min", "m"], 60_000_000)
        add(["hours", "hour", "hr", "h"], 3_600_000_000)
        add(["days", "day", "d"], 86_400_000_000)
        add(["weeks", "week", "w"], 604_800_000_000)
        add(["months", "month", "M"], 2_629_800_000_000)
        add(["years", "year", "y"], 31_557_600_000_000)
        return table
    }()

    /// Milliseconds, or nil when `text` is not a time span (or does not fit in an `Int`).
    /// `infinity` is not handled here; settings that accept it check for it first.
    public static func milliseconds(_ text: String) -> Int? {
        var totalMicroseconds: Int64 = 0
        var parsedAny = false
        var scanner = ConfigScanner(text)
        scanner.skipSpaces()
        while !scanner.isAtEnd {
            guard let number = scanner.decimalNumber() else { return nil }
            scanner.skipSpaces()
            let unit = scanner.word()
            // "1.2.3s" is not "1.2 s + 0.3 s": a number without a unit ends at a space or the end.
            guard !unit.isEmpty || scanner.isAtEnd || scanner.atSpace else { return nil }
            guard let perUnit = microsecondsPerUnit[unit] else { return nil }
            guard let component = number.scaled(by: perUnit) else { return nil }
            let (sum, overflow) = totalMicroseconds.addingReportingOverflow(component)
            guard !overflow else { return nil }
            totalMicroseconds = sum
            parsedAny = true
            scanner.skipSpaces()
        }
        guard parsedAny else { return nil }
        let milliseconds = totalMicroseconds / 1_000 + (totalMicroseconds % 1_000 == 0 ? 0 : 1)
        return Int(exactly: milliseconds)
    }
}

/// Byte sizes as systemd writes them, base 1024: `1048576`, `512K`, `1M`, `1MiB`, `1.5G`, `10B`.
/// Decimal-looking suffixes such as `KB` are rejected rather than guessed at.
public enum ConfigByteSize {
    static let bytesPerUnit: [String: Int64] = [
        "": 1, "B": 1,
        "K": 1 << 10, "KiB": 1 << 10,
        "M": 1 << 20, "MiB": 1 << 20,
        "G": 1 << 30, "GiB": 1 << 30,
        "T": 1 << 40, "TiB": 1 << 40,
    ]

    /// Bytes (fractions rounded down), or nil when `text` is not a size.
    public static func bytes(_ text: String) -> Int? {
        var scanner = ConfigScanner(text)
        scanner.skipSpaces()
        guard let number = scanner.decimalNumber() else { return nil }
        scanner.skipSpaces()
        guard let perUnit = bytesPerUnit[scanner.word()] else { return nil }
        scanner.skipSpaces()
        guard scanner.isAtEnd, let bytes = number.scaled(by: perUnit) else { return nil }
        return Int(exactly: bytes)
    }
}

/// Booleans as systemd's `parse_boolean` accepts them, case-insensitively.
public enum ConfigBoolean {
    public static func value(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "yes", "y", "true", "t", "on": return true
        case "0", "no", "n", "false", "f", "off": return false
        default: return nil
        }
    }
}

/// A non-negative decimal with an optional fraction, kept exact in its integer part.
struct ConfigDecimal {
    var integer: Int64
    /// The fraction in [0, 1); a Double is exact enough for the units involved (its contribution
    /// is less than one unit).
    var fraction: Double

    /// `self * factor`, rounded down, or nil on overflow.
    func scaled(by factor: Int64) -> Int64? {
        let (whole, overflow) = integer.multipliedReportingOverflow(by: factor)
        guard !overflow else { return nil }
        let (sum, overflowSum) = whole.addingReportingOverflow(Int64(fraction * Double(factor)))
        return overflowSum ? nil : sum
    }
}

/// A cursor over the Unicode scalars of a setting's value.
struct ConfigScanner {
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    var isAtEnd: Bool { position >= scalars.count }

    /// Whether the cursor is just after whitespace that `skipSpaces` consumed, or on whitespace.
    var atSpace: Bool {
        (position < scalars.count && scalars[position].properties.isWhitespace)
            || (position > 0 && scalars[position - 1].properties.isWhitespace)
    }

    mutating func skipSpaces() {
        while position < scalars.count, scalars[position].properties.isWhitespace { position += 1 }
    }

    /// `digits [. digits]` or `. digits`; nil (consuming nothing useful) when there are no digits.
    mutating func decimalNumber() -> ConfigDecimal? {
        var integer: Int64 = 0
        var digits = 0
        while position < scalars.count, let digit = Self.digitValue(scalars[position]) {
            let (shifted, overflowA) = integer.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = shifted.addingReportingOverflow(digit)
            guard !overflowA, !overflowB else { return nil }
            integer = next
            digits += 1
            position += 1
        }
        var fraction = 0.0
        if position < scalars.count, scalars[position] == "." {
            position += 1
            var scale = 0.1
            while position < scalars.count, let digit = Self.digitValue(scalars[position]) {
                fraction += Double(digit) * scale
                scale /= 10
                digits += 1
                position += 1
            }
        }
        return digits > 0 ? ConfigDecimal(integer: integer, fraction: fraction) : nil
    }

    /// The run of scalars up to the next digit, dot or whitespace (a unit name), possibly empty.
    mutating func word() -> String {
        var word = String.UnicodeScalarView()
        while position < scalars.count {
            let scalar = scalars[position]
            if Self.digitValue(scalar) != nil || scalar == "." || scalar.properties.isWhitespace { break }
            word.append(scalar)
            position += 1
        }
        return String(word)
    }

    private static func digitValue(_ scalar: Unicode.Scalar) -> Int64? {
        guard scalar.value >= 48, scalar.value <= 57 else { return nil }
        return Int64(scalar.value - 48)
    }
}
