import HTTPDNSProtocol

/// An `importCookies` run a slice at a time (`SlicedWork`): the text cut at line ends into
/// slices of at most `linesPerSlice` lines and about `bytesPerSlice` bytes, each imported and
/// committed on its own, and one answer once every slice's commit is in: the first failure,
/// else the cookies imported in all. Other requests of the same user may run between slices,
/// as they may between two imports.
final class ImportSlices {
    typealias Completion = (Result<ImportCookiesResult, RPCError>) -> Void

    static let linesPerSlice = 64
    static let bytesPerSlice = 16 << 10

    /// Work units of a slice: each line parsed and stored, and, in a full jar, an eviction that
    /// looks at every cookie (about 500 cookies a request's worth); and its bytes, one unit per
    /// 256 (a slice of long non-ASCII domains, each converted by IDNA, cost four times the lines'
    /// figure).
    static func cost(lines: Int, bytes: Int, jarCount: Int) -> Int { lines * (1 + jarCount / 512) + bytes / 256 }

    private let text: String
    private var position: String.Index
    private var outstanding = 0
    private var imported = 0
    private var failure: RPCError?
    private var allCut = false
    private let reply: Completion

    init(text: String, reply: @escaping Completion) {
        self.text = text
        position = text.utf8.startIndex
        self.reply = reply
    }

    /// Imports the next slice through `importSlice` (given the text and its completion, it
    /// returns the slice's cost); done once no text is left.
    func next(_ importSlice: (String, @escaping Completion) -> Int) -> SlicedWork.Outcome {
        guard let slice = nextSlice() else {
            allCut = true
            answerIfDone()
            return .done(units: 1)
        }
        outstanding += 1
        let units = importSlice(slice) { [self] result in
            outstanding -= 1
            switch result {
            case .success(let done): imported += done.imported
            case .failure(let error): failure = failure ?? error
            }
            answerIfDone()
        }
        return .more(units: units)
    }

    private func answerIfDone() {
        guard allCut && outstanding == 0 else { return }
        reply(failure.map { .failure($0) } ?? .success(ImportCookiesResult(imported: imported)))
    }

    private func nextSlice() -> String? {
        let utf8 = text.utf8
        guard position < utf8.endIndex else { return nil }
        var end = position
        var lines = 0
        var bytes = 0
        while end < utf8.endIndex && lines < Self.linesPerSlice && bytes < Self.bytesPerSlice {
            let byte = utf8[end]
            end = utf8.index(after: end)
            bytes += 1
            if byte == 0x0A { lines += 1 }
        }
        // Cut at a line's end: a long line goes whole into its slice.
        while end < utf8.endIndex && utf8[utf8.index(before: end)] != 0x0A {
            end = utf8.index(after: end)
        }
        let slice = String(decoding: utf8[position..<end], as: UTF8.self)
        position = end
        return slice
    }
}

@available(*, unavailable)
extension ImportSlices: Sendable {}
