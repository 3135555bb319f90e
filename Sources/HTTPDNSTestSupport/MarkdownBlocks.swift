/// Fenced code blocks of a Markdown file, as the tests that check the documentation's examples
/// read them: the text between a ```` ``` ```` fence line and the next.
public enum MarkdownBlocks {
    /// The first fenced block after the first line that starts with `marker`.
    public static func block(after marker: String, in text: String) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(marker) }) else { return nil }
        guard let open = lines[start...].firstIndex(where: { $0.hasPrefix("```") }) else { return nil }
        guard let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") }) else { return nil }
        return lines[(open + 1)..<close].joined(separator: "\n") + "\n"
    }

    /// Every fenced block of `text`, with the `<!-- example: SPEC -->` line right before its
    /// opening fence (nil when that line is something else).
    public static func all(in text: String, file: String) -> [DocumentedExample] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var examples: [DocumentedExample] = []
        var index = 0
        while index < lines.count {
            guard lines[index].hasPrefix("```") else {
                index += 1
                continue
            }
            let open = index
            let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") }) ?? lines.count
            let before = open > 0 ? lines[open - 1].trimmingSpaces : ""
            var spec: String?
            if before.hasPrefix("<!-- example:") && before.hasSuffix("-->") {
                spec = String(before.dropFirst("<!-- example:".count).dropLast(3)).trimmingSpaces
            }
            examples.append(
                DocumentedExample(
                    file: file, line: open + 1, language: String(lines[open].dropFirst(3)), spec: spec,
                    text: lines[(open + 1)..<min(close, lines.count)].joined(separator: "\n") + "\n"))
            index = close + 1
        }
        return examples
    }
}

/// One code block of the documentation and the marker that says how the tests check it.
public struct DocumentedExample: Sendable, CustomStringConvertible {
    /// The file, relative to the package root.
    public let file: String
    /// The line of the opening fence (Markdown) or of `.nf` (roff), from 1.
    public let line: Int
    /// The fence's info string (`sh`, `c`, ...); empty for roff.
    public let language: String
    /// What follows `example:` in the marker, without the comment's delimiters.
    public let spec: String?
    /// The block as a reader copies it (roff escapes undone).
    public let text: String

    /// The marker's kind: the part before the first `;`.
    public var kind: String? {
        spec.map { String($0.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces }
    }

    /// The marker's remarks after the kind, each `;`-separated part trimmed.
    public var remarks: [String] {
        guard let spec else { return [] }
        return spec.split(separator: ";").dropFirst().map { String($0).trimmingSpaces }
    }

    public var description: String { "\(file):\(line)" }
}

/// The EXAMPLES (or EXAMPLE) section of a man page: each `.nf` ... `.fi` block in it, with the
/// `.\" example: SPEC` comment line right before the block (before its `.RS`, if it has one).
public enum ManPageExamples {
    /// Every block of `text`'s EXAMPLES section.
    public static func all(in text: String, file: String) -> [DocumentedExample] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var examples: [DocumentedExample] = []
        var inExamples = false
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if line.hasPrefix(".SH") {
                inExamples = line.contains("EXAMPLE")
            }
            guard inExamples, line == ".nf" else {
                index += 1
                continue
            }
            var markerLine = index - 1
            if markerLine >= 0 && lines[markerLine].hasPrefix(".RS") { markerLine -= 1 }
            var spec: String?
            if markerLine >= 0, lines[markerLine].hasPrefix(#".\" example:"#) {
                spec = String(lines[markerLine].dropFirst(#".\" example:"#.count)).trimmingSpaces
            }
            let close = lines[(index + 1)...].firstIndex(of: ".fi") ?? lines.count
            let body = lines[(index + 1)..<close].map(unescape).joined(separator: "\n") + "\n"
            examples.append(DocumentedExample(file: file, line: index + 1, language: "", spec: spec, text: body))
            index = close + 1
        }
        return examples
    }

    /// A roff line as a reader copies it from the rendered page: the escapes these pages use.
    public static func unescape(_ line: String) -> String {
        var text = line
        for (escape, character) in [
            (#"\(aq"#, "'"), (#"\(dq"#, "\""), (#"\-"#, "-"), (#"\&"#, ""), (#"\e"#, "\\"),
        ] {
            text = text.replacing(escape, with: character)
        }
        return text
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }

}
