import HTTPDNSProtocol
import HTTPDNSSystem

/// Who is calling, as the kernel says (SO_PEERCRED at accept time).
public struct CallContext: Sendable {
    public let peer: PeerCredentials
    public let connectionID: UInt64
}

/// What a method produced.
public enum MethodOutcome: Sendable {
    case result(JSON)
    /// An already encoded JSON value (the OpenRPC document, served byte for byte).
    case rawResult([UInt8])
    case failure(RPCError)

    /// The outcome of a typed method, encoded.
    init(_ result: Result<JSON, RPCError>) {
        switch result {
        case .success(let json): self = .result(json)
        case .failure(let error): self = .failure(error)
        }
    }
}

/// The side of the server a connection talks to.
protocol ConnectionOwner: AnyObject {
    var loop: EventLoop { get }
    var limits: ServerLimits { get }
    var isStopping: Bool { get }
    func execute(_ request: RPCRequest, context: CallContext, completion: @escaping (MethodOutcome) -> Void)
    func connectionDidClose(_ connection: Connection)
    /// Scratch space for reads, shared by every connection of the loop thread.
    var readBuffer: UnsafeMutableRawBufferPointer { get }
}

/// One client connection: reads newline-framed requests, runs them, writes responses.
///
/// Requests are executed as they arrive, so pipelined requests may be answered out of order
/// (matched by id). Backpressure: when the client does not read its responses, the connection
/// stops reading requests until the output drains. Once the client half-closes (socat does
/// after stdin's EOF), every request already read is still answered before the close.
final class Connection: EventHandler {
    let id: UInt64
    let fd: FileDescriptor
    let context: CallContext
    private unowned let owner: any ConnectionOwner

    private var framer: LineFramer
    private var output: [UInt8] = []
    private var outputOffset = 0
    private(set) var inFlight = 0
    /// No more requests are read: end of file, an oversized line, or shutdown.
    private var readClosed = false
    private(set) var closed = false
    private var interest: UInt32 = 0
    /// While set, responses are batched and sent once the event is handled.
    private var handlingEvent = false

    /// Stop reading while this much output waits for the client.
    static let outputHighWater = 4 << 20

    init(id: UInt64, fd: FileDescriptor, peer: PeerCredentials, owner: any ConnectionOwner) {
        self.id = id
        self.fd = fd
        self.context = CallContext(peer: peer, connectionID: id)
        self.owner = owner
        self.framer = LineFramer(maxLineLength: owner.limits.maxLineLength)
    }

    func start() throws(SystemError) {
        interest = EpollEvents.readable
        try owner.loop.register(fd, events: interest, handler: self)
    }

    // MARK: events

    func handleEvents(_ events: UInt32) {
        guard !closed else { return }
        handlingEvent = true
        if events & (EpollEvents.readable | EpollEvents.hangUp | EpollEvents.error) != 0 && !readClosed {
            readAvailable()
        }
        handlingEvent = false
        guard !closed else { return }
        flush()
        settle()
    }

    private func readAvailable() {
        // Bounded per event so one busy client cannot monopolise the loop.
        var budget = 1 << 20
        let buffer = owner.readBuffer
        while budget > 0 && !readClosed && !closed {
            let result: IOResult<Int>
            do {
                result = try fd.read(into: buffer)
            } catch {
                abort()
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                readClosed = true
                return
            case .done(let count):
                budget -= count
                framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                processLines()
                if output.count - outputOffset > Self.outputHighWater { return }
                // A short read drained the socket: skip the read that would only say EAGAIN
                // (level-triggered epoll reports the connection again when more arrives).
                if count < buffer.count { return }
            }
        }
    }

    private func processLines() {
        framer.drain { event in
            switch event {
            case .line(let line):
                guard !readClosed else { return }
                handleLine(line)
            case .tooLong:
                write { out in
                    RPCEncoder.writeError(.lineTooLong(limit: owner.limits.maxLineLength), id: .null, to: &out)
                }
                readClosed = true
            }
        }
    }

    // MARK: requests

    private func handleLine(_ line: UnsafeBufferPointer<UInt8>) {
        switch RPCDecoder.decode(line: line, maxBatch: owner.limits.maxBatch) {
        case .failure(let error):
            write { RPCEncoder.writeError(error, id: .null, to: &$0) }
        case .single(.invalid(nil, _)):
            break
        case .single(.invalid(let id?, let error)):
            write { RPCEncoder.writeError(error, id: id, to: &$0) }
        case .single(.request(let request)):
            run(request) { [weak self] bytes in
                guard let self, let bytes else { return }
                self.write { $0.append(contentsOf: bytes) }
            }
        case .batch(let elements):
            let batch = BatchResponse(count: elements.count) { [weak self] bytes in
                self?.write { $0.append(contentsOf: bytes) }
            }
            for (index, element) in elements.enumerated() {
                switch element {
                case .invalid(nil, _):
                    batch.fill(index, nil)
                case .invalid(let id?, let error):
                    var out: [UInt8] = []
                    RPCEncoder.writeError(error, id: id, to: &out)
                    batch.fill(index, out)
                case .request(let request):
                    run(request) { batch.fill(index, $0) }
                }
            }
        }
    }

    /// Runs one request; `respond` gets the encoded response, or nil for a notification.
    private func run(_ request: RPCRequest, respond: @escaping ([UInt8]?) -> Void) {
        guard let id = request.id else {
            owner.execute(request, context: context) { _ in }
            respond(nil)
            return
        }
        guard inFlight < owner.limits.maxRequestsInFlight else {
            var out: [UInt8] = []
            RPCEncoder.writeError(
                .limitExceeded("requests in flight on one connection", limit: owner.limits.maxRequestsInFlight),
                id: id, to: &out)
            respond(out)
            return
        }
        inFlight += 1
        owner.execute(request, context: context) { [weak self] outcome in
            guard let self, !self.closed else { return }
            self.inFlight -= 1
            var out: [UInt8] = []
            out.reserveCapacity(128)
            switch outcome {
            case .result(let json): RPCEncoder.writeResult(json, id: id, to: &out)
            case .rawResult(let bytes): RPCEncoder.writeRawResult(bytes, id: id, to: &out)
            case .failure(let error): RPCEncoder.writeError(error, id: id, to: &out)
            }
            respond(out)
            if !self.handlingEvent { self.settle() }
        }
    }

    // MARK: output

    /// Appends one response line; sends at once unless an event is being handled.
    private func write(_ encode: (inout [UInt8]) -> Void) {
        guard !closed else { return }
        encode(&output)
        output.append(0x0A)
        if !handlingEvent {
            flush()
            settle()
        }
    }

    private func flush() {
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[outputOffset...])) }
            }
            switch result {
            case .success(.done(let sent)):
                outputOffset += sent
            case .success(.wouldBlock):
                return
            case .failure:
                // EPIPE/ECONNRESET: the client is gone; nothing left to deliver.
                abort()
                return
            }
        }
        if outputOffset > 0 {
            output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
            outputOffset = 0
        }
    }

    var hasPendingOutput: Bool { outputOffset < output.count }

    /// Closes when nothing is left to do, else sets the epoll interest for what remains.
    func settle() {
        guard !closed else { return }
        if owner.isStopping { readClosed = true }
        if readClosed && inFlight == 0 && !hasPendingOutput {
            close()
            return
        }
        var wanted: UInt32 = 0
        if !readClosed && output.count - outputOffset <= Self.outputHighWater { wanted |= EpollEvents.readable }
        if hasPendingOutput { wanted |= EpollEvents.writable }
        if wanted != interest {
            interest = wanted
            do {
                try owner.loop.modify(fd, events: wanted)
            } catch {
                abort()
            }
        }
    }

    /// Drops the connection at once (the peer is gone, or shutdown's grace period is over).
    func abort() {
        readClosed = true
        output.removeAll()
        outputOffset = 0
        close()
    }

    private func close() {
        guard !closed else { return }
        closed = true
        owner.loop.unregister(fd)
        fd.close()
        owner.connectionDidClose(self)
    }
}

/// Collects the responses of one batch and writes them as one array line once all are in.
/// A batch of notifications only produces no line at all (JSON-RPC 2.0 §6).
private final class BatchResponse {
    private var slots: [[UInt8]?]
    private var remaining: Int
    private let deliver: ([UInt8]) -> Void

    init(count: Int, deliver: @escaping ([UInt8]) -> Void) {
        slots = Array(repeating: nil, count: count)
        remaining = count
        self.deliver = deliver
    }

    func fill(_ index: Int, _ response: [UInt8]?) {
        slots[index] = response
        remaining -= 1
        guard remaining == 0 else { return }
        let present = slots.compactMap { $0 }
        guard !present.isEmpty else { return }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, response) in present.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: response)
        }
        out.append(UInt8(ascii: "]"))
        deliver(out)
    }
}
