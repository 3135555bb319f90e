/// The final response in what curl's `--dump-header` wrote for one transfer: the raw header
/// blocks as received, one per response (interim 1xx responses and a proxy's CONNECT answer
/// come first), each a status line, header lines and a blank line.
struct HeaderDump: Equatable {
    /// The status code of the last response (0 when the dump holds no status line).
    var status: Int
    /// Its header fields in order, names as received.
    var fields: [(name: String, value: String)]

    static func == (lhs: HeaderDump, rhs: HeaderDump) -> Bool {
        lhs.status == rhs.status && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
    }

    /// Reads the last response of a dump; bytes that are not UTF-8 are kept as U+FFFD.
    init(_ bytes: [UInt8]) {
        status = 0
        fields = []
        // Split on bytes: a Swift String holds "\r\n" as one Character.
        for rawLine in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let line = Substring(String(decoding: rawLine.last == 0x0D ? rawLine.dropLast() : rawLine, as: UTF8.self))
            if line.hasPrefix("HTTP/") {
                // A new response begins: only the last one counts.
                let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
                status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
                fields = []
            } else if let first = line.first, first == " " || first == "\t", !fields.isEmpty {
                // obs-fold (RFC 9112 section 5.2): the line continues the previous field.
                fields[fields.count - 1].value += " " + line.trimmingWhitespace()
            } else if let colon = line.firstIndex(of: ":") {
                fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace()))
            }
        }
    }

    /// Every value of the field `name` (case-insensitive), in order.
    func values(_ name: String) -> [String] {
        let lowered = name.lowercased()
        return fields.filter { $0.name.lowercased() == lowered }.map(\.value)
    }

    var isRedirect: Bool { (300...399).contains(status) }
}
