/// Splits a systemd-style INI text into section-qualified assignments, following systemd's
/// `config_parse`: `[Section]` headers; `Key=Value` with whitespace around both trimmed; lines
/// starting with `#` or `;` are comments; a line ending in `\` continues on the next one (the
/// backslash becomes a space, comment lines inside the continuation are skipped). Lines systemd
/// ignores with a warning (no `=`, an assignment before any section) are problems here.
struct INIReader {
    struct Assignment: Equatable {
        var section: String
        var key: String
        var value: String
        /// 1-based line where the assignment starts.
        var line: Int
    }

    struct SectionHeader: Equatable {
        var name: String
        var line: Int
    }

    enum Item: Equatable {
        case section(SectionHeader)
        case assignment(Assignment)
    }

    /// A line that is neither a header nor an assignment.
    struct LineProblem: Equatable {
        enum Kind: Equatable {
            case badSectionHeader, missingEquals, outsideSection, missingKey
        }
        var kind: Kind
        var line: Int
        var message: String
        /// The section the line is in (nil before the first header).
        var section: String?
        /// The line's first word, for a did-you-mean (never shown itself: it may hold a secret).
        var firstWord: String?
    }

    /// The file's headers and assignments, and every line that is neither.
    static func read(_ text: String) -> (items: [Item], problems: [LineProblem]) {
        var items: [Item] = []
        var problems: [LineProblem] = []
        var section: String?
        for (line, number) in logicalLines(text) {
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.first == "#" || trimmed.first == ";" { continue }
            if trimmed.first == "[" {
                let name = String(trimmed.dropFirst().dropLast().trimmingWhitespace())
                guard trimmed.last == "]", trimmed.count >= 2, !name.isEmpty,
                    !name.contains(where: { $0 == "[" || $0 == "]" })
                else {
                    problems.append(
                        LineProblem(
                            kind: .badSectionHeader, line: number, message: "invalid section header \"\(trimmed)\"",
                            section: section))
                    // What follows is in no section the daemon knows until the next header.
                    section = nil
                    continue
                }
                section = name
                items.append(.section(SectionHeader(name: name, line: number)))
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                let word = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init)
                problems.append(
                    LineProblem(
                        kind: .missingEquals, line: number, message: "missing '=' in an assignment", section: section,
                        firstWord: word))
                continue
            }
            let key = String(trimmed[..<equals].trimmingWhitespace())
            let value = String(trimmed[trimmed.index(after: equals)...].trimmingWhitespace())
            guard let section else {
                problems.append(
                    LineProblem(kind: .outsideSection, line: number, message: "assignment outside of a section"))
                continue
            }
            guard !key.isEmpty else {
                problems.append(
                    LineProblem(kind: .missingKey, line: number, message: "assignment without a key", section: section))
                continue
            }
            items.append(.assignment(Assignment(section: section, key: key, value: value, line: number)))
        }
        return (items, problems)
    }

    /// Physical lines joined across `\` continuations, each with the number of its first line.
    private static func logicalLines(_ text: String) -> [(String, Int)] {
        var result: [(String, Int)] = []
        var pending: String?
        var pendingStart = 0
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        for (offset, physical) in lines.enumerated() {
            let number = offset + 1
            let trimmedEnd = physical.trimmingTrailingWhitespace()
            // A comment never continues, and is skipped inside a continuation (systemd does both).
            let stripped = trimmedEnd.trimmingWhitespace()
            if stripped.first == "#" || stripped.first == ";" { continue }
            let continues = trimmedEnd.last == "\\"
            let content = continues ? String(trimmedEnd.dropLast()) + " " : String(physical)
            if pending == nil { pendingStart = number }
            pending = (pending ?? "") + content
            if !continues, let complete = pending {
                result.append((complete, pendingStart))
                pending = nil
            }
        }
        if let complete = pending { result.append((complete, pendingStart)) }
        return result
    }
}

extension StringProtocol {
    /// Without leading and trailing white space (configuration values, key files).
    public func trimmingWhitespace() -> SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return self[endIndex...] }
        return self[first...last]
    }

    fileprivate func trimmingTrailingWhitespace() -> SubSequence {
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? startIndex
        return self[startIndex..<end]
    }
}
