/// Where a piece of `--write-out` output belongs.
enum WriteOutStream: Equatable {
    case standardOutput
    case standardError
}

/// The user's `--write-out` format, rewritten for one hop.
///
/// curl prints `--write-out` after every transfer, but `curl -L` prints it once, for the last
/// response. So each hop's format sends everything to standard error, which httpdnsctl reads,
/// between markers that name the stream each part was meant for; httpdnsctl prints the parts of
/// the final hop where they belong and drops the others. `%{num_redirects}` becomes the number
/// of redirects followed so far, which curl, seeing one hop, cannot know.
struct WriteOutFormat {
    /// Random per run, so a response cannot forge a marker.
    let nonce: String

    var markerPrefix: String { "@@httpdnsctl-\(nonce):" }

    func marker(_ tag: Character) -> String { markerPrefix + String(tag) + "@@" }

    /// The format for curl: `format`'s tokens (curl's syntax: `%%`, `%{name}`, `%header{name}`,
    /// backslash escapes) with the stream switches and the redirect count replaced.
    func rewrite(_ format: String, redirects: Int) -> String {
        var output = "%{stderr}" + marker("o")
        var rest = Substring(format)
        while let first = rest.first {
            if first == "%", rest.count >= 2 {
                let afterPercent = rest.dropFirst()
                if afterPercent.hasPrefix("{"), let close = afterPercent.firstIndex(of: "}") {
                    let name = afterPercent[afterPercent.index(after: afterPercent.startIndex)..<close]
                    switch name {
                    case "stdout": output += "%{stderr}" + marker("o")
                    case "stderr": output += "%{stderr}" + marker("e")
                    case "num_redirects": output += String(redirects)
                    default: output += rest[...close]
                    }
                    rest = afterPercent[afterPercent.index(after: close)...]
                    continue
                }
                // `%%`, `%header{...}` and any other `%X` pass through as two characters at least.
                output += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first == "\\", rest.count >= 2 {
                output += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else {
                output.append(first)
                rest = rest.dropFirst()
            }
        }
        return output + marker("z")
    }
}

/// Splits what curl writes to standard error into what passes through to the user (live, as
/// it comes) and the `--write-out` parts between `WriteOutFormat`'s markers, and drops whole
/// lines that httpdnsctl itself caused (curl's complaint about the redirect it was told not to
/// follow).
struct StandardErrorDemultiplexer {
    private let prefix: [UInt8]
    private var pending: [UInt8] = []
    private var capturing: WriteOutStream?
    private var lines: LineFilter
    /// The `--write-out` parts seen so far, in order.
    private(set) var writeOut: [(stream: WriteOutStream, bytes: [UInt8])] = []

    init(format: WriteOutFormat, droppedLines: [String]) {
        prefix = Array(format.markerPrefix.utf8)
        lines = LineFilter(droppedLines: droppedLines.map { Array($0.utf8) })
    }

    /// Takes the next bytes read; returns those to pass on now.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        pending.append(contentsOf: bytes)
        var passed: [UInt8] = []
        while true {
            guard let start = firstIndex(of: prefix, in: pending) else {
                // Keep a tail that may be the start of a marker cut by the read.
                let keep = longestSuffixThatPrefixes(pending)
                route(pending[..<(pending.count - keep)], into: &passed)
                pending.removeFirst(pending.count - keep)
                return passed
            }
            let tagIndex = start + prefix.count
            guard pending.count >= tagIndex + 3 else {
                route(pending[..<start], into: &passed)
                pending.removeFirst(start)
                return passed
            }
            guard pending[tagIndex + 1] == 0x40, pending[tagIndex + 2] == 0x40 else {
                route(pending[...start], into: &passed)
                pending.removeFirst(start + 1)
                continue
            }
            route(pending[..<start], into: &passed)
            switch pending[tagIndex] {
            case UInt8(ascii: "o"):
                capturing = .standardOutput
                writeOut.append((.standardOutput, []))
            case UInt8(ascii: "e"):
                capturing = .standardError
                writeOut.append((.standardError, []))
            default:
                capturing = nil
            }
            pending.removeFirst(tagIndex + 3)
        }
    }

    /// At end of input: whatever was held back.
    mutating func finish() -> [UInt8] {
        var passed: [UInt8] = []
        route(pending[...], into: &passed)
        pending = []
        passed += lines.finish()
        return passed
    }

    private mutating func route(_ bytes: ArraySlice<UInt8>, into passed: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        if capturing != nil {
            writeOut[writeOut.count - 1].bytes += bytes
        } else {
            passed += lines.feed(bytes)
        }
    }

    private func longestSuffixThatPrefixes(_ bytes: [UInt8]) -> Int {
        var length = min(bytes.count, prefix.count - 1)
        while length > 0 {
            if bytes[(bytes.count - length)...].elementsEqual(prefix[..<length]) { return length }
            length -= 1
        }
        return 0
    }

    private func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count, let first = needle.first else { return nil }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}

/// Passes bytes through, except whole lines equal to one of `droppedLines` (each ending in
/// `\n`). A line start is held back only while it could still become a dropped line, so a
/// progress meter (which rewrites one line with `\r`) is not delayed.
struct LineFilter {
    let droppedLines: [[UInt8]]
    private var held: [UInt8] = []
    private var atLineStart = true

    init(droppedLines: [[UInt8]]) { self.droppedLines = droppedLines }

    mutating func feed(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        for byte in bytes {
            guard atLineStart || !held.isEmpty else {
                output.append(byte)
                if byte == 0x0A { atLineStart = true }
                continue
            }
            held.append(byte)
            atLineStart = false
            if droppedLines.contains(held) {
                held = []
                atLineStart = true
            } else if !droppedLines.contains(where: { $0.starts(with: held) }) {
                output += held
                held = []
                atLineStart = byte == 0x0A
            }
        }
        return output
    }

    mutating func finish() -> [UInt8] {
        defer { held = [] }
        return held
    }
}
