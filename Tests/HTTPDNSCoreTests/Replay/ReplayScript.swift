/// A resolver scenario as data, after unbound's replay files: the `[Resolver]` lines it runs on,
/// then numbered steps, each an event fed to the machine or a check of what it did
/// (Resources/replay/README.md describes the format).
struct ReplayScript {
    /// One step as written, with the iteration of the `REPEAT` blocks it came from.
    struct Step {
        var number: Int
        /// The step's line in the file.
        var line: Int
        /// `i=3` for a step repeated by `REPEAT i ...`, empty otherwise.
        var iteration: String
        var command: String
        var arguments: [String]
        /// `APPLY`'s configuration lines.
        var block: [String] = []
    }

    /// The file's name, for failures.
    var name: String
    var configuration: [String] = []
    var steps: [Step] = []
    /// The daemon's own uid (it may flush the cache, as root may).
    var daemonUID: UInt32 = 990
    /// `KNOWN_BUG text`: the scenario states what the machine should do and does not yet; it
    /// must fail (and the test says so once it passes).
    var knownBug: String?

    /// A line of the file that cannot be read.
    struct SyntaxError: Error, CustomStringConvertible {
        var name: String
        var line: Int
        var problem: String
        var description: String { "\(name):\(line): \(problem)" }
    }

    init(name: String, text: String) throws(SyntaxError) {
        self.name = name
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var index = 0
        var lastStep = 0
        /// Reads steps up to `REPEAT_END` (nested) or the end, substituting the loop variables.
        func readSteps(until end: String?) throws(SyntaxError) -> [(line: Int, text: String, block: [String])] {
            var body: [(line: Int, text: String, block: [String])] = []
            while index < lines.count {
                let number = index + 1
                let text = lines[index].trimmingSpaces
                index += 1
                if text.isEmpty || text.hasPrefix(";") { continue }
                if let end, text == end { return body }
                let words = Self.words(text)
                if words.first == "REPEAT" {
                    guard words.count == 4, let from = Int(words[2]), let to = Int(words[3]), from <= to else {
                        throw SyntaxError(name: name, line: number, problem: "REPEAT wants: REPEAT var from to")
                    }
                    let inner = try readSteps(until: "REPEAT_END")
                    for value in from...to {
                        for step in inner {
                            body.append(
                                (
                                    step.line, Self.substitute(step.text, words[1], value),
                                    step.block.map { Self.substitute($0, words[1], value) }
                                ))
                        }
                    }
                    continue
                }
                var block: [String] = []
                if words.count >= 3, words[0] == "STEP", words[2] == "APPLY" {
                    while index < lines.count, lines[index].trimmingSpaces != "APPLY_END" {
                        block.append(lines[index])
                        index += 1
                    }
                    guard index < lines.count else {
                        throw SyntaxError(name: name, line: number, problem: "APPLY without APPLY_END")
                    }
                    index += 1
                }
                body.append((number, text, block))
            }
            if let end { throw SyntaxError(name: name, line: lines.count, problem: "missing \(end)") }
            return body
        }
        // The configuration block comes first.
        while index < lines.count {
            let text = lines[index].trimmingSpaces
            if text.isEmpty || text.hasPrefix(";") {
                index += 1
                continue
            }
            if text.hasPrefix("KNOWN_BUG ") {
                knownBug = String(text.dropFirst(10))
                index += 1
                continue
            }
            if text.hasPrefix("DAEMON_UID ") {
                daemonUID = UInt32(text.dropFirst(11)) ?? daemonUID
                index += 1
                continue
            }
            guard text == "CONFIG" else { break }
            index += 1
            while index < lines.count, lines[index].trimmingSpaces != "CONFIG_END" {
                configuration.append(lines[index])
                index += 1
            }
            guard index < lines.count else { throw SyntaxError(name: name, line: index, problem: "missing CONFIG_END") }
            index += 1
        }
        var lastLine = 0
        for raw in try readSteps(until: nil) {
            var words = Self.words(raw.text)
            guard words.count >= 3, words[0] == "STEP", let number = Int(words[1]) else {
                throw SyntaxError(name: name, line: raw.line, problem: "expected STEP n COMMAND ..., got \(raw.text)")
            }
            // Repeated steps keep their number; steps written later must number higher.
            if raw.line > lastLine {
                guard number > lastStep else {
                    throw SyntaxError(name: name, line: raw.line, problem: "step \(number) after step \(lastStep)")
                }
                lastStep = number
                lastLine = raw.line
            }
            words.removeFirst(2)
            let command = words.removeFirst()
            steps.append(
                Step(
                    number: number, line: raw.line, iteration: Self.iteration(of: raw.text, in: lines[raw.line - 1]),
                    command: command, arguments: words, block: raw.block))
        }
    }

    /// Words split at blanks, a double-quoted word kept whole (without its quotes).
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        var started = false
        for character in text {
            if character == "\"" {
                quoted.toggle()
                started = true
            } else if character == " " || character == "\t", !quoted {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { words.append(current) }
        return words
    }

    /// `{v}`, `{v+N}` and `{v%N}` replaced by the loop value.
    static func substitute(_ text: String, _ variable: String, _ value: Int) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let expression = rest[rest.index(after: open)..<close]
            if expression == variable {
                out += String(value)
            } else if expression.hasPrefix(variable + "+"), let n = Int(expression.dropFirst(variable.count + 1)) {
                out += String(value + n)
            } else if expression.hasPrefix(variable + "%"), let n = Int(expression.dropFirst(variable.count + 1)) {
                out += String(value % n)
            } else {
                out += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// What a repeated step's substitutions made of it, to say which iteration failed.
    static func iteration(of expanded: String, in written: String) -> String {
        expanded == written.trimmingSpaces ? "" : "as \"\(expanded)\""
    }
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return String(text)
    }
}
