/// Writes metrics in the Prometheus text exposition format 0.0.4: per family a `# HELP` and a
/// `# TYPE` line, then its samples; label values escaped (backslash, quote, newline).
struct MetricsExposition {
    private(set) var text = ""

    /// A family with one sample per label set.
    mutating func family(
        _ name: String, type: String, help: String, samples: [(labels: [(String, String)], value: Double)]
    ) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for sample in samples { line(name, sample.labels, sample.value) }
    }

    /// A family with one unlabelled sample.
    mutating func single(_ name: String, type: String, help: String, _ value: Double) {
        family(name, type: type, help: help, samples: [([], value)])
    }

    /// A histogram per label set: cumulative `_bucket` samples with `le` (then `+Inf`), `_sum`, `_count`.
    mutating func histogram(
        _ name: String, help: String, bounds: [Double],
        series: [(labels: [(String, String)], buckets: [Int], sum: Double)]
    ) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for item in series {
            var cumulative = 0
            for (i, count) in item.buckets.enumerated() {
                cumulative += count
                let bound = i < bounds.count ? Self.number(bounds[i]) : "+Inf"
                line(name + "_bucket", item.labels + [("le", bound)], Double(cumulative))
            }
            line(name + "_sum", item.labels, item.sum)
            line(name + "_count", item.labels, Double(cumulative))
        }
    }

    private mutating func line(_ name: String, _ labels: [(String, String)], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.number(value) + "\n"
    }

    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Integers without a fraction, others as Swift prints a Double (Go's ParseFloat reads both).
    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
