import HTTPDNSProtocol

/// How far an `AnswerSource` got in one call.
enum AnswerProgress: Equatable {
    /// More is to come: call again once the client has read what was written.
    case more
    /// Everything is written.
    case finished
    /// Nothing to write now (a subscription between events): the source calls its `wake` when
    /// it has more. Only at a line boundary, so other answers may be written meanwhile.
    case waiting
}

/// Output written as the client reads it rather than all at once: a large answer from a cursor
/// over a snapshot (what it holds is the snapshot, not the encoded answer), or, the same way, a
/// subscription's lines as its events come.
///
/// The connection asks for the next piece whenever little of its output is left unsent and its
/// share of the turn's work lasts (each piece is charged to the caller's uid), so a client that
/// does not read holds one piece and one that reads at full speed gets everything, at any size.
protocol AnswerSource: AnyObject {
    /// Writes the next piece, about `budget` bytes (at least one element, so every call moves on).
    func writeNext(to out: inout JSONOutput, budget: Int) -> AnswerProgress
    /// Bytes of memory held for what is still to be written, charged to the caller's uid.
    var heldBytes: Int { get }
    /// Called once, when the connection takes it: `wake` asks the connection to call
    /// `writeNext` again after `.waiting`.
    func attach(wake: @escaping () -> Void)
}

extension AnswerSource {
    func attach(wake: @escaping () -> Void) {}
}

/// A method's result that is written in pieces: its JSON value only (the response around it is
/// `StreamedResponse`'s).
protocol ResultStream: AnyObject {
    /// Writes the next part of the value, about `budget` bytes; true once the value is complete.
    func writeNext(to out: inout JSONOutput, budget: Int) -> Bool
    /// Bytes of memory the snapshot behind it holds.
    var heldBytes: Int { get }
    /// Work units making it cost beyond what its method is charged before it runs (`workUnits`),
    /// known only once it is made.
    var preparationUnits: Int { get }
}

extension ResultStream {
    var preparationUnits: Int { 0 }
}

/// One response whose result streams: `{"jsonrpc":"2.0","id":…,"result":`, the result's
/// pieces, `}`, and a newline unless it is an element of a batch.
final class StreamedResponse: AnswerSource {
    private let id: RPCID
    private var result: (any ResultStream)?
    private let endsLine: Bool
    private var started = false

    init(id: RPCID, result: any ResultStream, endsLine: Bool) {
        self.id = id
        self.result = result
        self.endsLine = endsLine
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> AnswerProgress {
        guard let result else { return .finished }
        if !started {
            started = true
            JSONWriter.raw(#"{"jsonrpc":"2.0","id":"#, to: &out)
            id.write(to: &out)
            JSONWriter.raw(#","result":"#, to: &out)
        }
        guard result.writeNext(to: &out, budget: budget) else { return .more }
        out.append(UInt8(ascii: "}"))
        if endsLine { out.append(0x0A) }
        // The snapshot goes as soon as it is written, not when the connection lets go.
        self.result = nil
        return .finished
    }

    var heldBytes: Int { result?.heldBytes ?? 0 }
}

/// Answers waiting behind a streamed one, which no other answer may cut into: in order, bytes
/// ready to send and sources still to write.
struct PendingAnswers {
    enum Item {
        case bytes([UInt8])
        case source(any AnswerSource)
    }

    /// The source being written from, if any.
    private(set) var current: (any AnswerSource)?
    private var items: [Item] = []
    /// Sources waiting for events of their own, out of the way of the answers behind them.
    private var parked: [any AnswerSource] = []
    private var head = 0
    /// Bytes of the queued `.bytes` items.
    private(set) var queuedBytes = 0
    /// What the queued sources held when they were queued (they do not move while queued).
    private(set) var queuedHeldBytes = 0

    /// Nothing is being written or waits to be (parked sources aside: they end with the
    /// connection).
    var isEmpty: Bool { current == nil && head == items.count }

    /// Whether a source is being written from or parked (what they hold changes as they go).
    var hasSources: Bool { current != nil || !parked.isEmpty }

    /// Memory the sources hold.
    var heldBytes: Int {
        queuedHeldBytes + (current?.heldBytes ?? 0) + parked.reduce(0) { $0 + $1.heldBytes }
    }

    mutating func append(_ item: Item) {
        switch item {
        case .bytes(let bytes): queuedBytes += bytes.count
        case .source(let source): queuedHeldBytes += source.heldBytes
        }
        items.append(item)
    }

    /// The next item once the current source is done (nil: none).
    mutating func next() -> Item? {
        guard current == nil, head < items.count else { return nil }
        let item = items[head]
        head += 1
        switch item {
        case .bytes(let bytes): queuedBytes -= bytes.count
        case .source(let source): queuedHeldBytes -= source.heldBytes
        }
        if head == items.count {
            items.removeAll(keepingCapacity: items.capacity <= 16)
            head = 0
        }
        return item
    }

    mutating func start(_ source: any AnswerSource) { current = source }

    mutating func finishCurrent() { current = nil }

    /// The current source has nothing for now (`.waiting`): the answers behind it go first.
    mutating func parkCurrent() {
        guard let current else { return }
        parked.append(current)
        self.current = nil
    }

    /// A parked source has more: it goes back in line.
    mutating func unpark(_ source: any AnswerSource) {
        guard let index = parked.firstIndex(where: { $0 === source }) else { return }
        parked.remove(at: index)
        append(.source(source))
    }

    mutating func removeAll() {
        self = PendingAnswers()
    }
}
