import HTTPDNSClient

/// `httpdnsctl help [COMMAND...]`: the overview, a command's own help, or the cookie commands.
struct HelpCommand: Subcommand {
    static let words = ["help"]
    static let synopsis = "[COMMAND]"
    static let abstract = "Print the help of COMMAND (e.g. 'help resolve', 'help cookie get'), or this overview."
    static let details = """
        Example:
          httpdnsctl help cookie get

        """

    let topic: [String]

    init(_ arguments: [String]) throws(UsageError) {
        topic = try Self.parse(arguments).positionals
        _ = try Self.text(for: topic)
    }

    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        // Checked in init: an unknown topic is a usage error before anything runs.
        (try? Self.text(for: topic)) ?? CLI.usage
    }

    /// The help for the command `words` name (its arguments after the words are ignored, so
    /// `resolve x --help` works), the cookie group's list, or the overview.
    static func text(for words: [String]) throws(UsageError) -> String {
        guard let first = words.first else { return CLI.usage }
        if let type = CLI.subcommand(for: words) { return type.help }
        if first == "curl" { return CurlCommand.help }
        if first == "cookie" {
            if words.count > 1, !words[1].hasPrefix("-") {
                throw UsageError(
                    "unknown cookie subcommand \(words[1])" + Suggest.didYouMean(words[1], among: CLI.cookieSubcommands)
                )
            }
            var text = "Usage: httpdnsctl cookie COMMAND ...\n\nThe jar of the calling user.\n\nCommands:\n"
            for type in CLI.subcommands where type.words.first == "cookie" {
                text += "  \(type.usageLine)\n      \(type.abstract)\n"
            }
            return text
        }
        let names = Array(Set(CLI.subcommands.map { $0.words[0] } + ["curl"]))
        throw UsageError("no help for \(first)" + Suggest.didYouMean(first, among: names))
    }
}
