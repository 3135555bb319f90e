import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// Which of the server's per-turn lists hold a connection (so none holds it twice).
struct TurnQueues: OptionSet {
    let rawValue: UInt8
    /// To be flushed and settled at the end of this turn.
    static let flush = TurnQueues(rawValue: 1)
    /// To be resumed next turn.
    static let resume = TurnQueues(rawValue: 2)
}

/// One client connection: reads newline-framed requests, runs them, writes responses.
///
/// Requests run as they arrive, so pipelined requests may be answered out of order (matched
/// by id). Its life is `ConnectionState`'s and its bounds `Admission`'s; this class does the
/// I/O. Work and memory are bounded and charged to the peer's account (`ConnectionBudget`):
/// - each line, batch element, notification and piece of a streamed answer costs work units
///   (`WorkCost`); a connection spends at most `workPerTurn` of them per loop turn and its uid
///   `workPerTurnPerUser`, the rest waits for the next turn (no new readable event would
///   bring it back: the bytes are already read);
/// - memory is charged by capacity: the input buffer, the output buffer, answers waiting and
///   snapshots being streamed, requests in flight; while its uid is at its bound the
///   connection neither reads nor runs requests;
/// - no request runs while its (or its uid's) unsent output is over a cap; it resumes when
///   the output drains;
/// - large answers (`AnswerSource`) are written as the client reads them;
/// - requests and notifications in flight count against per-connection and per-user caps;
/// - an idle connection, or one holding an unfinished line, is closed after its timeout.
/// Once the client half-closes (socat does after stdin's EOF), every request already read is
/// still answered before the close. A peer that is gone entirely (EPOLLHUP, which epoll reports
/// whatever the interest) is dropped from epoll at once: of its requests only those with effects
/// run (`Method.hasEffects`), their answers go nowhere, and the loop never spins on it.
final class Connection: EventHandler {
    /// Write pieces of streamed answers while less than this is unsent.
    static let lowWater = 32 << 10
    /// About this much per piece of a streamed answer.
    static let pieceSize = 32 << 10
    /// What a connection costs beyond its buffers (this object, its descriptor's bookkeeping).
    static let fixedMemory = 1024
    /// What a request in flight holds, its params and its place in a flight (an estimate).
    static let memoryPerRequest = 512

    let id: UInt64
    let fd: FileDescriptor
    let context: CallContext
    /// What it holds and may do, as the server's `Admission` counts it.
    private(set) var budget: ConnectionBudget
    var user: UserLoad { budget.user }
    /// The server, unretained: it owns its connections and outlives them. The request path
    /// calls it borrowed (`onServer`), because a call through `server` (as through an
    /// `unowned(unsafe)` reference) retains it and releases it after, several times a request.
    private let borrowedServer: Unmanaged<RPCServer>
    var server: RPCServer { borrowedServer.takeUnretainedValue() }

    private var state = ConnectionState()
    var queued: TurnQueues = []
    private var framer: LineFramer
    /// The framer's capacity and pending bytes as last seen outside a drain (answers completing
    /// during one are charged while the framer is being changed, and must not read it).
    private var inputCapacity = 0
    private var inputPending = 0
    /// The line being run is the last byte received and nothing else was ready this turn: its
    /// answer is sent as soon as it is written, so what the request does after answering (and
    /// the rest of the turn) runs while the client reads it. Under load, answers go out together
    /// at the end of the turn (one send per connection, and fewer wake-ups of the clients).
    private var answersAtOnce = false
    /// The last send left output behind (the client is not reading as fast as it asks).
    private var socketWasFull = false
    /// A batch whose elements did not all run yet.
    private var batch: PendingBatch?
    /// Answers collected by batches still waiting for elements (they leave with the batch).
    private var batchHeldBytes = 0
    private var output = JSONOutput()
    private var outputOffset = 0
    /// Answers behind a streamed one.
    private var answers = PendingAnswers()
    var inFlight: Int { budget.inFlight }
    private var interest: UInt32 = 0
    /// When bytes last moved either way, or a request completed (loop clock, nanoseconds).
    private var lastActivity: Int64
    /// Since when the framer holds an unfinished line while the connection is read.
    private var unfinishedLineSince: Int64?
    /// A subscription (`monitor`) writes on this connection: it is not idle while it waits.
    private var subscribed = false

    init(fd: FileDescriptor, peer: PeerCredentials, budget: ConnectionBudget, server: RPCServer) {
        self.id = budget.id
        self.fd = fd
        self.context = CallContext(peer: peer, connectionID: budget.id, account: budget.user.uid)
        self.budget = budget
        self.borrowedServer = Unmanaged.passUnretained(server)
        self.framer = LineFramer(maxLineLength: server.limits.maxLineLength)
        lastActivity = server.loop.now
    }

    private var limits: ServerLimits { onServer { $0.limits } }

    /// `body` on the server, borrowed (see `borrowedServer`).
    @inline(__always)
    private func onServer<R>(_ body: (RPCServer) -> R) -> R { borrowedServer._withUnsafeGuaranteedRef(body) }

    /// Answer bytes not yet taken by the socket, queued ones included.
    var unsentByteCount: Int { output.count - outputOffset + answers.queuedBytes }

    func start() throws(SystemError) {
        interest = EpollEvents.readable
        try server.loop.register(fd, events: interest, handler: self)
        recharge()
    }

    // MARK: events

    func handleEvents(_ events: UInt32) {
        guard !state.isClosed else { return }
        if events & (EpollEvents.readable | EpollEvents.hangUp | EpollEvents.error) != 0 && state.mayRead {
            read()
            runLines()
        }
        if events & (EpollEvents.hangUp | EpollEvents.error) != 0 { peerLeft() }
        onServer { $0.needsFlush(self) }
    }

    /// Goes on after a wait (the next turn, drained output, released memory), or with answers
    /// left to write.
    func resume() {
        guard !state.isClosed else { return }
        if let wait = state.wait {
            switch wait {
            case .unsentOutput:
                guard !outputOverCap else { return }
                // The line's clock ran while the connection was not read; it starts over.
                unfinishedLineSince = nil
            case .memory:
                let mustWait = onServer {
                    $0.admission.mustWaitForMemory(&budget, serving: state.isServing, holdsInput: inputPending > 0)
                }
                guard !mustWait else { return onServer { $0.admission.waitForMemory(&budget) } }
            case .nextTurn:
                break
            }
            _ = state.cleared(wait)
        }
        runLines()
        if state.mayRead {
            read()
            runLines()
        }
        onServer { $0.needsFlush(self) }
    }

    /// One `recv` of whatever is there (up to the shared buffer), unless the uid's memory or
    /// the turn's work is spent.
    private func read() {
        let wait = onServer {
            $0.admission.reasonNotToRead(&budget, serving: state.isServing, holdsInput: inputPending > 0)
        }
        if let wait { return stop(wait) }
        let buffer = server.readBuffer
        let result: IOResult<Int>
        do {
            result = try fd.read(into: buffer)
        } catch {
            // ECONNRESET: the peer is gone.
            peerLeft()
            state.inputEnded()
            return
        }
        switch result {
        case .wouldBlock:
            return
        case .done(0):
            state.inputEnded()
        case .done(let count):
            lastActivity = server.loop.now
            charge(WorkCost.read(bytes: count))
            framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            inputCapacity = framer.capacity
            inputPending = framer.pendingByteCount
            recharge()
        }
    }

    /// Runs a pending batch's elements, then complete lines, until none is left or something
    /// says to wait (`reasonToWait`).
    private func runLines() {
        defer {
            // Fewer bytes than were read: a line was finished (and run, or skipped when blank).
            let finishedALine = framer.pendingByteCount < inputPending
            inputCapacity = framer.capacity
            inputPending = framer.pendingByteCount
            recharge()
            if finishedALine { releaseFinishingLine() }
            trackUnfinishedLine()
        }
        guard state.mayRun else { return }
        if let wait = reasonToWait() { return stop(wait) }
        if batch != nil && !runBatch() { return }
        var wait: ConnectionState.Wait?
        framer.drainLines(while: { event, endsInput in
            switch event {
            case .line(let line):
                answersAtOnce = endsInput && onServer { $0.loop.readyThisTurn } <= 1
                handleLine(line)
                answersAtOnce = false
            case .tooLong:
                appendLine { RPCEncoder.writeError(.lineTooLong(limit: limits.maxLineLength), id: .null, to: &$0) }
                state.inputEnded()
                return false
            }
            // A batch that stopped half way has set its wait.
            guard batch == nil, !state.isClosed else { return false }
            wait = reasonToWait()
            return wait == nil
        })
        if let wait { stop(wait) }
    }

    /// Why the next request may not run now, if it may not (`Admission.reasonToWait`).
    private func reasonToWait() -> ConnectionState.Wait? {
        let output = Admission.HeldOutput(
            unsent: unsentByteCount, answersQueued: !answers.isEmpty,
            heldBehind: answers.queuedHeldBytes + batchHeldBytes)
        return onServer {
            $0.admission.reasonToWait(&budget, output: output, serving: state.isServing, holdsInput: inputPending > 0)
        }
    }

    private func stop(_ wait: ConnectionState.Wait) {
        state.stopped(wait)
        switch wait {
        case .nextTurn: server.needsResume(self)
        case .memory: onServer { $0.admission.waitForMemory(&budget) }
        // Its own output is over its cap, or it has some while its uid is over the uid's: its
        // own flush resumes it once that drains.
        case .unsentOutput: break
        }
    }

    /// Whether the output caps hold back the next request (`Admission.outputOverCap`).
    private var outputOverCap: Bool {
        guard state.isServing else { return false }
        let output = Admission.HeldOutput(
            unsent: unsentByteCount, answersQueued: !answers.isEmpty,
            heldBehind: answers.queuedHeldBytes + batchHeldBytes)
        return onServer { $0.admission.outputOverCap(user, output) }
    }

    /// Woken after memory was released: whether it may go on (`Admission.memoryWaitEnds`; if not,
    /// it waits again).
    func memoryWaitEnds() -> Bool {
        onServer { $0.admission.memoryWaitEnds(&budget, holdsInput: inputPending > 0) }
    }

    /// Lets go of the right to finish its line past the bound (a line was finished, or the
    /// connection closed): another connection of its account may finish one next.
    private func releaseFinishingLine() {
        onServer { $0.admission.lineFinished(&budget) }
    }

    /// Charges work to this connection's and its uid's shares of the turn (a method charges what
    /// it found it needed through `Reply.charge`).
    func charge(_ units: Int) {
        onServer { $0.admission.charge(&budget, units) }
    }

    private func hasCredit() -> Bool {
        onServer { $0.admission.hasCredit(&budget) }
    }

    private func trackUnfinishedLine() {
        if framer.pendingByteCount == 0 { releaseFinishingLine() }
        if framer.pendingByteCount == 0 || state.isClosed {
            unfinishedLineSince = nil
        } else if unfinishedLineSince == nil && state.wait != .unsentOutput && !framer.hasCompleteLine {
            unfinishedLineSince = server.loop.now
        }
    }

    // MARK: requests

    /// Handles one line: a request, an error, or a batch whose elements then run in turn.
    private func handleLine(_ line: UnsafeBufferPointer<UInt8>) {
        charge(WorkCost.line(bytes: line.count))
        if let request = onServer({ $0.scanner.scan(line) }) {
            run(request.method, request.params, id: request.id, batch: nil, slot: 0)
            return
        }
        switch RPCDecoder.decode(line: line, maxBatch: limits.maxBatch) {
        case .failure(let error):
            appendLine { RPCEncoder.writeError(error, id: .null, to: &$0) }
        case .single(.invalid(nil, _)):
            break
        case .single(.invalid(let id?, let error)):
            appendLine { RPCEncoder.writeError(error, id: id, to: &$0) }
        case .single(.request(let request)):
            run(request, batch: nil, slot: 0)
        case .batch(let elements):
            batch = PendingBatch(elements: elements, lineBytes: line.count)
            _ = runBatch()
        }
    }

    /// Runs the pending batch's elements until it is done (true) or something says to wait.
    private func runBatch() -> Bool {
        while let pending = batch {
            guard let (slot, element) = pending.next() else {
                batch = nil
                return true
            }
            if slot > 0, let wait = reasonToWait() {
                let holdsAnswers = pending.response.heldBytes > 0
                switch onServer({ $0.admission.batchElement(waitingFor: wait, batchHoldsAnswers: holdsAnswers) }) {
                case .refuse(let error):
                    refuseElement(element, in: pending.response, slot: slot, error: error)
                    continue
                case .wait(let wait):
                    pending.putBack()
                    stop(wait)
                    return false
                }
            }
            switch element {
            case .invalid(nil, _):
                deliver(nil, to: pending.response, slot: slot)
            case .invalid(let id?, let error):
                var out = JSONOutput()
                RPCEncoder.writeError(error, id: id, to: &out)
                deliver(.bytes(out.bytes), to: pending.response, slot: slot)
            case .request(let request):
                charge(1)
                // The elements' answers wait in the batch until the last is in: they count
                // against the output cap like output, and requests past it are refused.
                let collected = pending.response.byteCount
                if request.id != nil,
                    let refusal = onServer({
                        $0.admission.batchRequestRefusal(collected: collected, unsent: unsentByteCount)
                    })
                {
                    refuseElement(element, in: pending.response, slot: slot, error: refusal)
                } else {
                    run(request, batch: pending.response, slot: slot)
                }
            }
        }
        return true
    }

    /// A batch element that cannot wait for what it would need: `error` (a notification is dropped).
    private func refuseElement(_ element: RPCInbound, in response: BatchResponse, slot: Int, error: RPCError) {
        guard case .request(let request) = element, let id = request.id else {
            deliver(nil, to: response, slot: slot)
            return
        }
        var out = JSONOutput()
        RPCEncoder.writeError(error, id: id, to: &out)
        deliver(.bytes(out.bytes), to: response, slot: slot)
    }

    private func run(_ request: RPCRequest, batch: BatchResponse?, slot: Int) {
        guard let method = Method(rawValue: request.method) else {
            let responder = Responder(connection: self, id: request.id, batch: batch, slot: slot)
            onServer { $0.admission.inFlight(&budget) }
            responder.fail(.methodNotFound(request.method))
            return
        }
        run(method, Params(request.params), id: request.id, batch: batch, slot: slot)
    }

    /// Runs one request within the in-flight caps; beyond them a request gets -32003 and a
    /// notification is dropped (it cannot be answered). A notification costs what a request does.
    private func run(_ method: Method, _ params: Params, id: RPCID?, batch: BatchResponse?, slot: Int) {
        // A client that is gone reads no answer: what it left queued runs only for its effects
        // (its lines are charged all the same), so that a client cannot queue costly reads and
        // leave the loop to work for nobody.
        if !state.isServing && !method.hasEffects {
            if let batch { deliver(nil, to: batch, slot: slot) }
            return
        }
        let responder = Responder(connection: self, id: id, batch: batch, slot: slot, method: method)
        if let refusal = onServer({ $0.admission.requestArrives(&budget) }) {
            responder.fail(refusal)
            return
        }
        charge(onServer { $0.workUnits(of: method, context: context) })
        onServer { $0.dispatch(method, params, context: context, to: responder) }
    }

    /// A request's outcome: counts it out of flight and writes its response where it goes.
    func complete(_ responder: Responder, encode: (inout JSONOutput) -> Void) {
        guard answered() else { return }
        if let batch = responder.batch {
            var part: BatchResponse.Part?
            if responder.id != nil && state.isServing {
                var encoded = JSONOutput()
                encode(&encoded)
                charge(WorkCost.answer(bytes: encoded.count))
                part = .bytes(encoded.bytes)
            }
            deliver(part, to: batch, slot: responder.slot)
        } else if responder.id != nil {
            appendLine(encode)
            // A socket found full is tried again at the turn's end, not at each answer.
            if answersAtOnce && answers.isEmpty && !socketWasFull { send() }
        }
        recharge()
        onServer { $0.needsFlush(self) }
    }

    /// A request's outcome that is written as the client reads it. A notification's, or one
    /// for a client that is gone, is dropped at once (with the snapshot it holds).
    func complete(_ responder: Responder, streaming result: some ResultStream) {
        charge(result.preparationUnits)
        guard answered() else { return }
        if let id = responder.id, state.isServing {
            let response = StreamedResponse(id: id, result: result, endsLine: responder.batch == nil)
            if let batch = responder.batch {
                deliver(.source(response), to: batch, slot: responder.slot)
            } else {
                enqueue(.source(response))
            }
        } else if let batch = responder.batch {
            deliver(nil, to: batch, slot: responder.slot)
        }
        recharge()
        onServer { $0.needsFlush(self) }
    }

    /// A request answered by a source that writes its own lines from now on (a subscription).
    /// A notification's is dropped; in a batch, whose line cannot stay open, it is an error.
    func complete(_ responder: Responder, opening source: some AnswerSource) {
        if let batch = responder.batch {
            guard answered() else { return }
            var part: BatchResponse.Part?
            if let id = responder.id, state.isServing {
                var out = JSONOutput()
                RPCEncoder.writeError(.invalidRequest("a subscription cannot be a batch element"), id: id, to: &out)
                part = .bytes(out.bytes)
            }
            deliver(part, to: batch, slot: responder.slot)
        } else {
            guard answered() else { return }
            if responder.id != nil && state.isServing {
                subscribed = true
                enqueue(.source(source))
            }
        }
        recharge()
        onServer { $0.needsFlush(self) }
    }

    /// Counts a request out of flight; false when the connection is closed (nothing to write).
    private func answered() -> Bool {
        let closed = state.isClosed
        onServer { $0.admission.answered(&budget, connectionClosed: closed) }
        if closed { return false }
        lastActivity = server.loop.now
        return true
    }

    private func deliver(_ response: BatchResponse.Part?, to batch: BatchResponse, slot: Int) {
        let before = batch.byteCount + batch.heldBytes
        let line = batch.fill(slot, response)
        batchHeldBytes += batch.byteCount + batch.heldBytes - before
        guard let line else { return }
        batchHeldBytes -= batch.byteCount + batch.heldBytes
        guard state.isServing else { return }
        for item in line { enqueue(item) }
    }

    // MARK: output

    /// Appends one response line, to be sent at the end of the turn or at once (`answersAtOnce`),
    /// after the answers queued before it.
    private func appendLine(_ encode: (inout JSONOutput) -> Void) {
        guard state.isServing else { return }
        let written: Int
        if answers.isEmpty {
            let before = output.count
            encode(&output)
            output.append(0x0A)
            written = output.count - before
        } else {
            var line = JSONOutput()
            encode(&line)
            line.append(0x0A)
            written = line.count
            answers.append(.bytes(line.bytes))
        }
        charge(WorkCost.answer(bytes: written))
        onServer { $0.needsFlush(self) }
    }

    private func enqueue(_ item: PendingAnswers.Item) {
        if case .source(let source) = item {
            source.attach { [weak self, weak source] in
                guard let self, let source, !self.state.isClosed else { return }
                self.answers.unpark(source)
                self.server.needsFlush(self)
            }
        }
        if answers.isEmpty, case .bytes(let bytes) = item {
            output.append(contentsOf: bytes)
        } else {
            answers.append(item)
        }
    }

    /// Writes the answers that wait, and the next pieces of a streamed one, while little is
    /// unsent and the turn's work credit lasts; returns whether it wrote anything.
    @discardableResult
    private func writeAnswers() -> Bool {
        var wrote = false
        while output.count - outputOffset < Self.lowWater {
            if let source = answers.current {
                guard hasCredit() else {
                    // More next turn (the socket may have taken everything: no EPOLLOUT then).
                    server.needsResume(self)
                    break
                }
                let before = output.count
                let progress = source.writeNext(to: &output, budget: Self.pieceSize)
                charge(WorkCost.written(bytes: output.count - before))
                wrote = wrote || output.count > before
                switch progress {
                case .more: continue
                case .finished: answers.finishCurrent()
                case .waiting: answers.parkCurrent()
                }
            } else if let item = answers.next() {
                wrote = true
                switch item {
                case .bytes(let bytes): output.append(contentsOf: bytes)
                case .source(let source): answers.start(source)
                }
            } else {
                break
            }
        }
        return wrote
    }

    /// The end of a turn: write what waits, send, then set the epoll interest (or close) from
    /// what is left. A client that reads at full speed gets more pieces in the same turn while
    /// the credit lasts.
    func flushAndSettle() {
        guard !state.isClosed else { return }
        writeAnswers()
        while send() && !answers.isEmpty && writeAnswers() {}
        recharge()
        settle()
    }

    /// One send of everything unsent; true when the socket took all of it.
    @discardableResult
    private func send() -> Bool {
        guard state.isServing, outputOffset < output.count else { return false }
        let result = output.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[outputOffset...])) }
        }
        switch result {
        case .success(.done(let sent)):
            outputOffset += sent
            lastActivity = server.loop.now
        case .success(.wouldBlock):
            break
        case .failure:
            // EPIPE/ECONNRESET: the client is gone; nothing left to deliver.
            peerLeft()
            return false
        }
        let tookAll = outputOffset == output.count
        socketWasFull = !tookAll
        if tookAll {
            output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
            outputOffset = 0
        } else if outputOffset >= 64 * 1024 {
            output.removeFirst(outputOffset)
            outputOffset = 0
        }
        if state.wait == .unsentOutput && !outputOverCap { server.needsResume(self) }
        return tookAll
    }

    /// Closes when nothing is left to do, else sets the epoll interest for what remains.
    func settle() {
        guard !state.isClosed else { return }
        if server.isStopping { state.inputEnded() }
        let settlement = state.settlement(
            linesLeft: batch != nil || framer.hasCompleteLine, unanswered: inFlight,
            unsentBytes: outputOffset < output.count, answersLeft: !answers.isEmpty)
        switch settlement {
        case .close:
            close()
        case .continueNextTurn:
            server.needsResume(self)
        case .watch(let readable, let writable):
            let wanted = (readable ? EpollEvents.readable : 0) | (writable ? EpollEvents.writable : 0)
            guard wanted != interest else { return }
            interest = wanted
            do {
                try server.loop.modify(fd, events: wanted)
            } catch {
                disconnect()
            }
        }
    }

    /// The peer can receive nothing more: stop watching the descriptor (EPOLLHUP cannot be
    /// masked, so a watched one would wake the loop at every turn) and drop unsent output.
    private func peerLeft() {
        guard state.peerLeft() else { return }
        server.loop.unregister(fd)
        interest = 0
        discardOutput()
    }

    private func discardOutput() {
        output.removeAll()
        outputOffset = 0
        answers.removeAll()
        recharge()
    }

    /// Charges what the connection now holds to its uid: memory by capacity, and unsent output.
    private func recharge() {
        let unsent = state.isClosed ? 0 : unsentByteCount
        var memory = 0
        if !state.isClosed {
            // Without a source, what the queued ones held is read in place: asking the sources
            // made Swift copy `answers` out first (a retain and a release of each of its arrays).
            let held = answers.hasSources ? answers.heldBytes : answers.queuedHeldBytes
            memory =
                Self.fixedMemory + inputCapacity + output.capacity + answers.queuedBytes + held
                + batchHeldBytes + (batch?.heldBytes ?? 0) + inFlight * Self.memoryPerRequest
        }
        guard memory != budget.chargedMemory || unsent != budget.chargedUnsentOutput else { return }
        onServer { $0.admission.holds(&budget, memory: memory, unsentOutput: unsent) }
    }

    // MARK: deadlines

    /// Closes the connection when it was idle, or held an unfinished line, for too long.
    func checkDeadlines(now: Int64) {
        guard !state.isClosed else { return }
        let missed = onServer {
            $0.admission.deadline(
                now: MonotonicInstant(nanoseconds: now), lastActivity: MonotonicInstant(nanoseconds: lastActivity),
                unfinishedLineSince: unfinishedLineSince.map { MonotonicInstant(nanoseconds: $0) },
                busy: inFlight > 0 || subscribed, waitingForOutput: state.wait == .unsentOutput)
        }
        switch missed {
        case .idle?: disconnect()
        case .unfinishedLine(let error)?: refuse(error)
        case nil: break
        }
    }

    // MARK: closing

    /// Answers `error` with id null (best effort, at once) and closes.
    private func refuse(_ error: RPCError) {
        appendLine { RPCEncoder.writeError(error, id: .null, to: &$0) }
        send()
        disconnect()
    }

    /// Closes at once, dropping what is unsent and unread (a limit, a deadline, or the end of
    /// shutdown's grace period).
    func disconnect() {
        state.inputEnded()
        batch = nil
        discardOutput()
        close()
    }

    /// Its watch could not start: it was never served, and its account forgets it.
    func abandon() {
        fd.close()
        _ = state.close()
        onServer { $0.admission.closed(&budget) }
    }

    private func close() {
        let wasWatched = state.isServing
        guard state.close() else { return }
        if wasWatched { server.loop.unregister(fd) }
        fd.close()
        framer = LineFramer(maxLineLength: 0)
        inputCapacity = 0
        inputPending = 0
        releaseFinishingLine()
        batch = nil
        answers.removeAll()
        recharge()
        onServer { $0.admission.closed(&budget) }
        server.connectionDidClose(self)
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

/// A batch's elements, run in turn across loop turns; what it holds until the last has run.
final class PendingBatch {
    private let elements: [RPCInbound]
    private var index = 0
    let response: BatchResponse
    /// The decoded elements not yet run: about twice their text (an estimate).
    private let decodedBytes: Int

    init(elements: [RPCInbound], lineBytes: Int) {
        self.elements = elements
        response = BatchResponse(count: elements.count)
        decodedBytes = 2 * lineBytes
    }

    /// The next element and its slot (nil once all ran); `putBack` undoes it.
    func next() -> (Int, RPCInbound)? {
        guard index < elements.count else { return nil }
        index += 1
        return (index - 1, elements[index - 1])
    }

    func putBack() { index -= 1 }

    /// Memory held for the elements still to run.
    var heldBytes: Int { index < elements.count ? decodedBytes : 0 }
}

@available(*, unavailable)
extension PendingBatch: Sendable {}
