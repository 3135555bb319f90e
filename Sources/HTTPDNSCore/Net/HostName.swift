/// What is wrong with a host name, in words fit for a JSON-RPC -32602 message.
public enum HostNameError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    /// The name's length in bytes (without the trailing dot), over 253.
    case tooLong(Int)
    /// Two dots in a row, or a leading dot.
    case emptyLabel
    case labelTooLong(String)
    case invalidCharacter(label: String)
    case hyphenAtLabelEdge(String)

    public var description: String {
        switch self {
        case .empty:
            return "host name is empty"
        case .tooLong(let length):
            return "host name is \(length) bytes long; at most \(HostName.maxLength) are allowed"
        case .emptyLabel:
            return "host name has an empty label (two dots in a row or a leading dot)"
        case .labelTooLong(let label):
            return "label '\(label.prefix(20))...' is longer than \(HostName.maxLabelLength) bytes"
        case .invalidCharacter(let label):
            return "label '\(HostName.printable(label))' has a character other than letters, digits, '-' and '_'"
                + " (internationalized names must be sent as A-labels)"
        case .hyphenAtLabelEdge(let label):
            return "label '\(label)' starts or ends with a hyphen"
        }
    }
}

/// Validation of the host names the resolver accepts.
public enum HostName {
    /// RFC 1035 section 2.3.4: 255 octets on the wire, which is 253 characters of text without the root dot.
    public static let maxLength = 253
    /// RFC 1035 section 2.3.4.
    public static let maxLabelLength = 63

    /// Checks an ASCII (A-label) name and returns it lowercased, without one trailing dot.
    ///
    /// Underscores are allowed because service names (`_dmarc`, `_sip._tcp`) and some real hosts use them.
    public static func validate(_ raw: String) -> Result<String, HostNameError> {
        var bytes = Array(raw.utf8)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        guard !bytes.isEmpty else { return .failure(.empty) }
        guard bytes.count <= maxLength else { return .failure(.tooLong(bytes.count)) }
        for i in bytes.indices where bytes[i] >= UInt8(ascii: "A") && bytes[i] <= UInt8(ascii: "Z") {
            bytes[i] += 32
        }
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            let text = String(decoding: label, as: UTF8.self)
            guard !label.isEmpty else { return .failure(.emptyLabel) }
            guard label.count <= maxLabelLength else { return .failure(.labelTooLong(text)) }
            guard label.allSatisfy(isAllowed) else { return .failure(.invalidCharacter(label: text)) }
            guard label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                return .failure(.hyphenAtLabelEdge(text))
            }
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// The label with control characters replaced, so an error message stays one clean line.
    static func printable(_ label: String) -> String {
        String(label.prefix(64).map { $0.isASCII && ($0.asciiValue ?? 0) < 0x20 ? "?" : $0 })
    }
}
