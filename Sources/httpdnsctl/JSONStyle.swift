import HTTPDNSProtocol

/// `--json[=short|pretty]`, as systemd's tools take it: one line per JSON value, or indented.
enum JSONStyle: Equatable {
    case short
    case pretty

    /// `short`, `pretty` or `off` (nil: human output); nil for any other word.
    static func parse(_ word: String) -> JSONStyle?? {
        switch word {
        case "short": .some(.short)
        case "pretty": .some(.pretty)
        case "off": .some(nil)
        default: nil
        }
    }

    /// The value as this style prints it, ending in a newline.
    func render(_ value: JSON) -> String {
        switch self {
        case .short: value.encodedString + "\n"
        case .pretty: Self.indented(value, depth: 0) + "\n"
        }
    }

    /// Two spaces a level, members in their order, scalars as the short form writes them.
    private static func indented(_ value: JSON, depth: Int) -> String {
        let inner = String(repeating: "  ", count: depth + 1)
        let outer = String(repeating: "  ", count: depth)
        switch value {
        case .array(let elements) where !elements.isEmpty:
            let lines = elements.map { inner + indented($0, depth: depth + 1) }
            return "[\n" + lines.joined(separator: ",\n") + "\n" + outer + "]"
        case .object(let object) where object.first(where: { _ in true }) != nil:
            let lines = object.map { member in
                inner + JSON.string(member.key).encodedString + ": " + indented(member.value, depth: depth + 1)
            }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + outer + "}"
        default:
            return value.encodedString
        }
    }
}
