import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// One client connection: reads newline-framed requests, runs them, writes responses.
///
/// Requests run as they arrive, so pipelined requests may be answered out of order (matched
/// by id). Work and memory per client are bounded:
/// - at most `requestsPerTurn` lines per loop turn; what is left runs in the next turn (no new
///   readable event would bring it back: the bytes are already read);
/// - no request runs while the connection's (or its user's) unsent output is over its cap, and
///   nothing more is read then; running resumes when the output drains;
/// - requests and notifications in flight count against per-connection and per-user caps;
/// - buffered unfinished lines count against per-user and total caps;
/// - an idle connection, or one holding an unfinished line, is closed after its timeout.
/// Once the client half-closes (socat does after stdin's EOF), every request already read is
/// still answered before the close. A peer that is gone entirely (EPOLLHUP, which epoll reports
/// whatever the interest) is dropped from epoll at once: its requests run, their answers go
/// nowhere, and the loop never spins on it.
final class Connection: EventHandler {
    let id: UInt64
    let fd: FileDescriptor
    let context: CallContext
    let user: UserLoad
    // unowned(unsafe): the server owns its connections and outlives them; a checked unowned
    // reference costs a retain and a release at every use on the request path.
    private unowned(unsafe) let server: RPCServer

    private var framer: LineFramer
    private var output = JSONOutput()
    private var outputOffset = 0
    private(set) var inFlight = 0
    /// No more bytes are read: end of file, an oversized line, shutdown, or a refusal.
    private var readClosed = false
    /// Nothing can be delivered any more (hang-up, a failed send): no epoll, no output.
    private var peerGone = false
    private(set) var closed = false
    private var interest: UInt32 = 0
    /// Complete lines may be waiting in the framer (the turn's budget or the output cap stopped them).
    private var linesPending = false
    /// Requests stopped because unsent output passed a cap; resumed when it drains.
    private var waitingForOutput = false
    var flushQueued = false
    var resumeQueued = false
    /// When bytes last moved either way, or a request completed (loop clock, nanoseconds).
    private var lastActivity: Int64
    /// Since when the framer holds an unfinished line while the connection is read.
    private var unfinishedLineSince: Int64?
    /// What this connection added to the user's and server's counters.
    private var bufferedInputCounted = 0
    private var pendingOutputCounted = 0

    init(id: UInt64, fd: FileDescriptor, peer: PeerCredentials, user: UserLoad, server: RPCServer) {
        self.id = id
        self.fd = fd
        self.context = CallContext(peer: peer, connectionID: id)
        self.user = user
        self.server = server
        self.framer = LineFramer(maxLineLength: server.limits.maxLineLength)
        lastActivity = server.loop.now
    }

    private var limits: ServerLimits { server.limits }
    private var pendingOutput: Int { output.count - outputOffset }

    func start() throws(SystemError) {
        interest = EpollEvents.readable
        try server.loop.register(fd, events: interest, handler: self)
    }

    // MARK: events

    func handleEvents(_ events: UInt32) {
        guard !closed else { return }
        if events & (EpollEvents.readable | EpollEvents.hangUp | EpollEvents.error) != 0 && wantsToRead {
            readOnce()
            runLines()
        }
        if events & (EpollEvents.hangUp | EpollEvents.error) != 0 { peerHungUp() }
        server.needsFlush(self)
    }

    /// Runs what the last turn left, and reads on when that is done (epoll was not asked to say
    /// whether there is more while lines were waiting).
    func resume() {
        guard !closed else { return }
        if waitingForOutput {
            guard !outputOverCap else { return }
            waitingForOutput = false
            // The line's clock ran while the connection was not read; it starts over.
            unfinishedLineSince = nil
        }
        runLines()
        if wantsToRead {
            readOnce()
            runLines()
        }
        server.needsFlush(self)
    }

    private var wantsToRead: Bool { !readClosed && !linesPending && !waitingForOutput }

    /// One `recv` of whatever is there (up to the shared buffer).
    private func readOnce() {
        let buffer = server.readBuffer
        let result: IOResult<Int>
        do {
            result = try fd.read(into: buffer)
        } catch {
            // ECONNRESET: the peer is gone.
            peerHungUp()
            readClosed = true
            return
        }
        switch result {
        case .wouldBlock:
            return
        case .done(0):
            readClosed = true
        case .done(let count):
            lastActivity = server.loop.now
            framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Runs complete lines until none is left, the turn's budget is spent, or output is over a cap.
    private func runLines() {
        defer { accountBufferedInput() }
        var budget = limits.requestsPerTurn
        guard !outputOverCap else {
            // Checked before each request: not even one more answer while over a cap.
            linesPending = framer.pendingByteCount > 0
            waitingForOutput = true
            return
        }
        let drained = framer.drainLines(while: { event in
            switch event {
            case .line(let line):
                budget -= handleLine(line)
            case .tooLong:
                appendLine { RPCEncoder.writeError(.lineTooLong(limit: limits.maxLineLength), id: .null, to: &$0) }
                readClosed = true
                return false
            }
            if outputOverCap {
                waitingForOutput = true
                return false
            }
            return budget > 0 && !closed
        })
        linesPending = !drained && !framer.overflowed
        if linesPending && !waitingForOutput { server.needsResume(self) }
    }

    /// Whether the next request must wait for output to drain: this connection's own is over
    /// its cap, or it has some while its user's is over the user's. A connection whose client
    /// has read everything always runs, so a sibling that never reads cannot starve it (the
    /// server drops such siblings when the user's output grows past twice its cap); a waiting
    /// connection has output, so its own flush resumes it.
    private var outputOverCap: Bool {
        guard !peerGone, pendingOutput > 0 else { return false }
        return pendingOutput > limits.maxPendingOutput || user.pendingOutput > limits.maxPendingOutputPerUser
    }

    /// Unsent output bytes (the server drops the largest when a user has too many).
    var unsentByteCount: Int { pendingOutput }

    /// Counts the framer's bytes against the user's and the server's caps; a connection that
    /// takes either over is answered -32003 and closed.
    private func accountBufferedInput() {
        let now = framer.pendingByteCount
        let delta = now - bufferedInputCounted
        guard delta != 0 else {
            trackUnfinishedLine()
            return
        }
        bufferedInputCounted = now
        user.bufferedInput += delta
        server.bufferedInput += delta
        if delta > 0 {
            if user.bufferedInput > limits.maxBufferedInputPerUser {
                refuse(.limitExceeded("buffered request bytes of one user", limit: limits.maxBufferedInputPerUser))
                return
            }
            if server.bufferedInput > limits.maxBufferedInput {
                refuse(.limitExceeded("buffered request bytes", limit: limits.maxBufferedInput))
                return
            }
        }
        trackUnfinishedLine()
    }

    private func trackUnfinishedLine() {
        if framer.pendingByteCount == 0 {
            unfinishedLineSince = nil
        } else if !linesPending && unfinishedLineSince == nil {
            unfinishedLineSince = server.loop.now
        }
    }

    // MARK: requests

    /// Handles one line; returns how many requests it held (a batch counts each element).
    private func handleLine(_ line: UnsafeBufferPointer<UInt8>) -> Int {
        if let request = server.scanner.scan(line) {
            run(request.method, request.params, id: request.id, batch: nil, slot: 0)
            return 1
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
            let batch = BatchResponse(count: elements.count)
            for (slot, element) in elements.enumerated() {
                switch element {
                case .invalid(nil, _):
                    deliver(nil, to: batch, slot: slot)
                case .invalid(let id?, let error):
                    var out = JSONOutput()
                    RPCEncoder.writeError(error, id: id, to: &out)
                    deliver(out.bytes, to: batch, slot: slot)
                case .request(let request):
                    // The elements' answers wait in the batch until the last is in: they count
                    // against the output cap like output, and requests past it are refused.
                    if batch.byteCount + pendingOutput > limits.maxPendingOutput && request.id != nil {
                        var out = JSONOutput()
                        let error = RPCError.limitExceeded(
                            "output waiting for the client", limit: limits.maxPendingOutput)
                        RPCEncoder.writeError(error, id: request.id ?? .null, to: &out)
                        deliver(out.bytes, to: batch, slot: slot)
                    } else {
                        run(request, batch: batch, slot: slot)
                    }
                }
            }
            return elements.count
        }
        return 1
    }

    private func run(_ request: RPCRequest, batch: BatchResponse?, slot: Int) {
        guard let method = Method(rawValue: request.method) else {
            let responder = Responder(connection: self, id: request.id, batch: batch, slot: slot)
            inFlight += 1
            user.inFlight += 1
            responder.fail(.methodNotFound(request.method))
            return
        }
        run(method, Params(request.params), id: request.id, batch: batch, slot: slot)
    }

    /// Runs one request within the in-flight caps; beyond them a request gets -32003 and a
    /// notification is dropped (it cannot be answered).
    private func run(_ method: Method, _ params: Params, id: RPCID?, batch: BatchResponse?, slot: Int) {
        let responder = Responder(connection: self, id: id, batch: batch, slot: slot)
        var refusal: RPCError?
        if inFlight >= limits.maxRequestsInFlight {
            refusal = .limitExceeded("requests in flight on one connection", limit: limits.maxRequestsInFlight)
        } else if user.inFlight >= limits.maxRequestsInFlightPerUser {
            refusal = .limitExceeded("requests in flight of one user", limit: limits.maxRequestsInFlightPerUser)
        }
        inFlight += 1
        user.inFlight += 1
        if let refusal {
            responder.fail(refusal)
            return
        }
        server.dispatch(method, params, context: context, to: responder)
    }

    /// A request's outcome: counts it out of flight and writes its response where it goes.
    func complete(_ responder: Responder, encode: (inout JSONOutput) -> Void) {
        inFlight -= 1
        user.inFlight -= 1
        if closed {
            server.forgetIfUnused(user)
            return
        }
        lastActivity = server.loop.now
        if let batch = responder.batch {
            var out: [UInt8]?
            if responder.id != nil && !peerGone {
                var encoded = JSONOutput()
                encode(&encoded)
                out = encoded.bytes
            }
            deliver(out, to: batch, slot: responder.slot)
        } else if responder.id != nil {
            appendLine(encode)
        }
        server.needsFlush(self)
    }

    private func deliver(_ response: [UInt8]?, to batch: BatchResponse, slot: Int) {
        if let line = batch.fill(slot, response) { appendLine { $0.append(contentsOf: line) } }
    }

    // MARK: output

    /// Appends one response line, to be sent at the end of the turn.
    private func appendLine(_ encode: (inout JSONOutput) -> Void) {
        guard !closed && !peerGone else { return }
        let before = output.count
        encode(&output)
        output.append(0x0A)
        pendingOutputCounted += output.count - before
        server.outputChanged(user, by: output.count - before)
        server.needsFlush(self)
    }

    /// The end of a turn: one send of everything pending, then the epoll interest (or the close)
    /// that follows from what is left.
    func flushAndSettle() {
        guard !closed else { return }
        flush()
        settle()
    }

    private func flush() {
        guard !peerGone, outputOffset < output.count else { return }
        let result = output.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[outputOffset...])) }
        }
        switch result {
        case .success(.done(let sent)):
            outputOffset += sent
            lastActivity = server.loop.now
            pendingOutputCounted -= sent
            server.outputChanged(user, by: -sent)
        case .success(.wouldBlock):
            break
        case .failure:
            // EPIPE/ECONNRESET: the client is gone; nothing left to deliver.
            peerHungUp()
            return
        }
        if outputOffset == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
            outputOffset = 0
        } else if outputOffset >= 64 * 1024 {
            output.removeFirst(outputOffset)
            outputOffset = 0
        }
        if waitingForOutput && !outputOverCap { server.needsResume(self) }
    }

    /// Closes when nothing is left to do, else sets the epoll interest for what remains.
    func settle() {
        guard !closed else { return }
        if server.isStopping { readClosed = true }
        if peerGone {
            if linesPending || (!readClosed && !waitingForOutput) {
                // Read and run what the peer sent before it went: notifications must still run.
                server.needsResume(self)
            } else {
                close()
            }
            return
        }
        if readClosed && !linesPending && inFlight == 0 && pendingOutput == 0 {
            close()
            return
        }
        var wanted: UInt32 = 0
        if wantsToRead { wanted |= EpollEvents.readable }
        if pendingOutput > 0 { wanted |= EpollEvents.writable }
        if wanted != interest {
            interest = wanted
            do {
                try server.loop.modify(fd, events: wanted)
            } catch {
                abort()
            }
        }
    }

    /// The peer can receive nothing more: stop watching the descriptor (EPOLLHUP cannot be
    /// masked, so a watched one would wake the loop at every turn) and drop unsent output.
    private func peerHungUp() {
        guard !peerGone && !closed else { return }
        peerGone = true
        server.loop.unregister(fd)
        interest = 0
        discardOutput()
    }

    private func discardOutput() {
        if pendingOutputCounted != 0 { server.outputChanged(user, by: -pendingOutputCounted) }
        pendingOutputCounted = 0
        output.removeAll()
        outputOffset = 0
    }

    // MARK: deadlines

    /// Closes the connection when it was idle, or held an unfinished line, for too long.
    func checkDeadlines(now: Int64) {
        guard !closed else { return }
        let idle = limits.idleTimeoutMilliseconds
        if idle > 0 && inFlight == 0 && now - lastActivity >= idle * 1_000_000 {
            abort()
            return
        }
        let line = limits.lineTimeoutMilliseconds
        if line > 0, !waitingForOutput, let since = unfinishedLineSince, now - since >= line * 1_000_000 {
            refuse(.invalidRequest("line not completed within \(line) ms"))
        }
    }

    // MARK: closing

    /// Answers `error` with id null (best effort, at once) and closes.
    private func refuse(_ error: RPCError) {
        appendLine { RPCEncoder.writeError(error, id: .null, to: &$0) }
        flush()
        abort()
    }

    /// Drops the connection at once (the peer is gone, a limit, or shutdown's grace period is over).
    func abort() {
        readClosed = true
        linesPending = false
        discardOutput()
        close()
    }

    private func close() {
        guard !closed else { return }
        closed = true
        if !peerGone { server.loop.unregister(fd) }
        fd.close()
        if bufferedInputCounted != 0 {
            user.bufferedInput -= bufferedInputCounted
            server.bufferedInput -= bufferedInputCounted
            bufferedInputCounted = 0
        }
        framer = LineFramer(maxLineLength: 0)
        server.connectionDidClose(self)
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
