/// One option of a curl command line, with its long name whatever spelling the user chose
/// (`-sSo FILE`, `--out FILE` and `--output FILE` all give an `output` option).
struct CurlOption: Equatable {
    /// The long name without `--` (`output`), or the word as typed for an option curl may not know.
    var name: String
    /// `--no-NAME`.
    var negated = false
    var value: String?
    /// False for a word the option table does not know: it is passed on as typed.
    var known = true
    /// httpdnsctl's own option (`--fallback`, `--host`), never passed to curl.
    var own = false

    init(_ name: String, _ value: String? = nil, negated: Bool = false, known: Bool = true, own: Bool = false) {
        self.name = name
        self.value = value
        self.negated = negated
        self.known = known
        self.own = own
    }

    /// The option as separate arguments for curl, in its long spelling.
    var arguments: [String] {
        guard known else { return [name] + (value.map { [$0] } ?? []) }
        return ["--" + (negated ? "no-" : "") + name] + (value.map { [$0] } ?? [])
    }
}

/// A curl command line split into options and URLs, as curl reads it: short options bundle
/// (`-sSL`), a short option's value may be attached (`-XPOST`, `-ofile`) or be the next argument,
/// a long option's value is always the next argument (curl has no `--name=value`), `--no-NAME`
/// turns a flag off, and after `--` everything is a URL. httpdnsctl's own options
/// (`CurlOptionTable.httpdnsctlOptions`, spelled out in full) are read the same way.
struct CurlCommandLine: Equatable {
    enum Element: Equatable {
        case option(CurlOption)
        case url(String)
    }

    var elements: [Element]
    /// The positions in the arguments given of httpdnsctl's own options and their values.
    var ownArgumentPositions: [Int] = []

    init(elements: [Element]) { self.elements = elements }

    init(_ arguments: [String]) throws(UsageError) {
        var elements: [Element] = []
        var index = 0
        var optionsEnded = false
        var ownArgumentPositions: [Int] = []
        func nextValue(for name: String) throws(UsageError) -> String {
            guard index < arguments.count else { throw UsageError("curl option \(name) needs a value") }
            index += 1
            return arguments[index - 1]
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                elements.append(.url(argument))
            } else if argument == "--" {
                optionsEnded = true
            } else if argument.hasPrefix("--") {
                let word = String(argument.dropFirst(2))
                if let takesValue = CurlOptionTable.httpdnsctlOptions[word] {
                    ownArgumentPositions.append(index - 1)
                    if takesValue { ownArgumentPositions.append(index) }
                    let value = takesValue ? try nextValue(for: argument) : nil
                    elements.append(.option(CurlOption(word, value, own: true)))
                    continue
                }
                guard let (name, negated) = CurlOptionTable.longOption(word) else {
                    elements.append(.option(CurlOption(argument, known: false)))
                    continue
                }
                let value = CurlOptionTable.takesValue(name) ? try nextValue(for: argument) : nil
                elements.append(.option(CurlOption(name, value, negated: negated)))
            } else {
                var letters = Substring(argument.dropFirst())
                while let letter = letters.first {
                    letters = letters.dropFirst()
                    guard let name = CurlOptionTable.letters[letter] else {
                        elements.append(.option(CurlOption("-" + String(letter), known: false)))
                        continue
                    }
                    guard CurlOptionTable.takesValue(name) else {
                        elements.append(.option(CurlOption(name)))
                        continue
                    }
                    // The rest of the group is the value; an empty rest takes the next argument.
                    let value = letters.isEmpty ? try nextValue(for: "-" + String(letter)) : String(letters)
                    elements.append(.option(CurlOption(name, value)))
                    letters = ""
                }
            }
        }
        self.elements = elements
        self.ownArgumentPositions = ownArgumentPositions
    }

    /// `arguments` (those this command line was read from) without httpdnsctl's own options:
    /// what curl itself may be given.
    func curlArguments(of arguments: [String]) -> [String] {
        let own = Set(ownArgumentPositions)
        return arguments.indices.filter { !own.contains($0) }.map { arguments[$0] }
    }

    /// curl's options (httpdnsctl's own are in `own`).
    var options: [CurlOption] {
        elements.compactMap { if case .option(let option) = $0, !option.own { return option } else { return nil } }
    }

    /// The value of httpdnsctl's own option `name` (the last one given), "" for a flag; nil when absent.
    func own(_ name: String) -> String? {
        for case .option(let option) in elements.reversed() where option.own && option.name == name {
            return option.value ?? ""
        }
        return nil
    }

    var urls: [String] {
        elements.compactMap { if case .url(let url) = $0 { return url } else { return nil } }
    }

    /// The value of the last `name` option (curl: the last one wins), nil when absent.
    func last(_ name: String) -> String? {
        options.last { $0.name == name && $0.value != nil }?.value
    }

    /// Every value given to `name`, in order (options that add up, like `--header`).
    func all(_ name: String) -> [String] {
        options.filter { $0.name == name }.compactMap(\.value)
    }

    /// Whether the flag is on after the last of `names` (and their `--no-` forms) given.
    func flag(_ names: String...) -> Bool {
        guard let last = options.last(where: { names.contains($0.name) }) else { return false }
        return !last.negated
    }

    /// Whether any of `names` was given at all.
    func has(_ names: String...) -> Bool {
        options.contains { names.contains($0.name) }
    }
}
