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
}
