import HTTPDNSProtocol

/// A command line the user got wrong: exits 64 (EX_USAGE) with this one-line message.
struct UsageError: Error, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}

/// One option of a subcommand: what it is called, the placeholder of its value (nil for a
/// flag), the values shell completion offers for it, and one line of help.
struct OptionDoc: Equatable {
    let name: String
    let value: String?
    let choices: [String]
    let help: String

    static func flag(_ name: String, _ help: String) -> OptionDoc {
        OptionDoc(name: name, value: nil, choices: [], help: help)
    }

    static func valued(_ name: String, _ value: String, choices: [String] = [], _ help: String) -> OptionDoc {
        OptionDoc(name: name, value: value, choices: choices, help: help)
    }

    /// `--family F` or `--no-stale`, as the usage text shows it.
    var usage: String { value.map { "\(name) \($0)" } ?? name }
}

/// The options one subcommand accepts.
struct OptionSpec {
    /// Options that stand alone (`--no-stale`).
    var flags: Set<String> = []
    /// Options that take a value (`--family ipv4` or `--family=ipv4`).
    var valued: Set<String> = []

    init(_ options: [OptionDoc]) {
        for option in options {
            if option.value == nil { flags.insert(option.name) } else { valued.insert(option.name) }
        }
    }

    /// Every name, for did-you-mean.
    var names: [String] { Array(flags) + Array(valued) }
}

/// A subcommand's arguments split into positionals and recognised options.
struct ParsedArguments: Equatable {
    var positionals: [String] = []
    var flags: Set<String> = []
    var values: [String: String] = [:]

    /// Splits `arguments`; anything after `--` is positional, and a lone `-` (stdin/stdout) too.
    init(_ arguments: [String], spec: OptionSpec) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if spec.flags.contains(name) {
                guard inlineValue == nil else { throw UsageError("option \(name) takes no value") }
                flags.insert(name)
            } else if spec.valued.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("option \(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                guard values[name] == nil else { throw UsageError("option \(name) given twice") }
                values[name] = value
            } else {
                // The global options go anywhere before `--`: a mistyped one is theirs too.
                let names = spec.names + CLI.globalOptions.map(\.name)
                throw UsageError("unknown option \(name)" + Suggest.didYouMean(name, among: names))
            }
        }
    }

    /// Exactly `names.count` positionals, named in the message when some are missing or extra.
    func positionals(_ names: String...) throws(UsageError) -> [String] {
        if positionals.count < names.count { throw UsageError("missing \(names[positionals.count])") }
        if positionals.count > names.count { throw UsageError("unexpected argument \(positionals[names.count])") }
        return positionals
    }

    /// At most one positional, for optional `[FILE]` / `[HOST]`.
    func optionalPositional() throws(UsageError) -> String? {
        if positionals.count > 1 { throw UsageError("unexpected argument \(positionals[1])") }
        return positionals.first
    }
}

/// The did-you-mean tail of a usage error.
enum Suggest {
    /// ` (did you mean --family?)`, or nothing when no known name is close.
    static func didYouMean(_ typed: String, among names: [String]) -> String {
        NameSuggestion.closest(to: typed, among: names).map { " (did you mean \($0)?)" } ?? ""
    }
}
