/// Splits a systemd-style INI text into section-qualified assignments, following systemd's
/// `config_parse`: `[Section]` headers; `Key=Value` with whitespace around both trimmed; lines
/// starting with `#` or `;` are comments; a line ending in `\` continues on the next one (the
/// backslash becomes a space, comment lines inside the continuation are skipped). Lines systemd
/// ignores with a warning (no `=`, an assignment before any section) become warnings here.
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

    /// Why a line cannot be read at all (a malformed section header).
    struct SyntaxError: Error, Equatable {
        var line: Int
        var message: String
    }

    static func read(_ text: String) -> Result<(items: [Item], ignored: [(line: Int, message: String)]), SyntaxError> {
        var items: [Item] = []
        var ignored: [(line: Int, message: String)] = []
        var section: String?
        for (line, number) in logicalLines(text) {
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.first == "#" || trimmed.first == ";" { continue }
            if trimmed.first == "[" {
                guard trimmed.last == "]", trimmed.count >= 2 else {
                    return .failure(SyntaxError(line: number, message: "invalid section header \"\(trimmed)\""))
                }
                let name = String(trimmed.dropFirst().dropLast().trimmingWhitespace())
                guard !name.isEmpty, !name.contains(where: { $0 == "[" || $0 == "]" }) else {
                    return .failure(SyntaxError(line: number, message: "invalid section header \"\(trimmed)\""))
                }
                section = name
                items.append(.section(SectionHeader(name: name, line: number)))
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                ignored.append((number, "missing '=', ignoring line"))
                continue
            }
            let key = String(trimmed[..<equals].trimmingWhitespace())
            let value = String(trimmed[trimmed.index(after: equals)...].trimmingWhitespace())
            guard let section else {
                ignored.append((number, "assignment outside of a section, ignoring"))
                continue
            }
            guard !key.isEmpty else {
                ignored.append((number, "assignment without a key, ignoring"))
                continue
            }
            items.append(.assignment(Assignment(section: section, key: key, value: value, line: number)))
        }
        return .success((items, ignored))
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
