import HTTPDNSProtocol
import HTTPDNSTestSupport

/// Random JSON values for round-trip properties: every kind of value, strings with the characters
/// that need escaping and with every UTF-8 length, and number literals of every grammar branch.
struct JSONGenerator {
    var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(state: seed) }

    static let numberLiterals = [
        "0", "-0", "7", "-12", "1.5", "-0.001", "1e10", "1E-7", "2.5e+3", "123456789012345678901234567890",
        "9223372036854775807", "-9223372036854775808", "1e400", "0.0",
    ]

    /// Scalars chosen to exercise escaping and UTF-8: controls, quote, backslash, slash, DEL, line
    /// separators, BMP and astral characters, combining marks and noncharacters.
    static let interestingScalars: [Unicode.Scalar] = [
        "\0", "\u{1}", "\u{8}", "\t", "\n", "\u{B}", "\u{C}", "\r", "\u{1B}", "\u{1F}", " ", "\"", "\\", "/", "a",
        "Z", "\u{7F}", "\u{80}", "\u{E9}", "\u{301}", "\u{212A}", "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}",
        "\u{FFFF}", "\u{10000}", "\u{1F600}", "\u{10FFFF}",
    ]

    mutating func string() -> String {
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            if Bool.random(using: &rng) {
                s.append(Self.interestingScalars.randomElement(using: &rng)!)
            } else {
                // Any scalar value: skip the surrogate range, which has no scalars.
                var value = UInt32.random(in: 0...0x10FFFF, using: &rng)
                if (0xD800...0xDFFF).contains(value) { value -= 0x800 }
                s.append(Unicode.Scalar(value)!)
            }
        }
        return String(s)
    }

    mutating func value(depth: Int = 0) -> JSON {
        let containers = depth < 6
        switch Int.random(in: 0..<(containers ? 8 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return number(Self.numberLiterals.randomElement(using: &rng)!)
        case 3: return .int64(Int64.random(in: .min ... .max, using: &rng))
        case 4: return .string(string())
        case 5:
            return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(depth: depth + 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                // Short names repeat now and then, so duplicate members are generated too.
                let key = Bool.random(using: &rng) ? string() : ["a", "b", ""].randomElement(using: &rng)!
                object.append(key, value(depth: depth + 1))
            }
            return .object(object)
        }
    }
}
