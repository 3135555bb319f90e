import HTTPDNSSystem

/// The end of a request's time: `timeoutMs` after its start, or none for 0 (as libcurl reads it).
struct Deadline {
    let start: Int64
    private let end: Int64?

    init(timeoutMs: Int) {
        start = MonotonicClock.nowNanoseconds()
        // Clamped to about 12 days, so the nanoseconds cannot overflow.
        end = timeoutMs > 0 ? start + Int64(min(timeoutMs, 1 << 30)) * 1_000_000 : nil
    }

    /// What a poll may wait, in milliseconds rounded up: -1 without a deadline, nil once it passed.
    var pollTimeout: Int32? {
        guard let end else { return -1 }
        let left = end - MonotonicClock.nowNanoseconds()
        guard left > 0 else { return nil }
        return Int32(clamping: (left + 999_999) / 1_000_000)
    }

    var elapsedMilliseconds: Int64 { (MonotonicClock.nowNanoseconds() - start) / 1_000_000 }
    var elapsedSeconds: Double { Double(MonotonicClock.nowNanoseconds() - start) / 1e9 }
}

/// Why a socket operation ended early.
enum SocketFailure: Error {
    case timedOut
    case failed(SystemError)
}

/// A connected TCP socket used blocking-style on the calling thread: the descriptor is non-blocking,
/// and every wait is a poll bounded by the request's deadline.
struct DeadlineSocket {
    let fd: FileDescriptor

    /// Connects to `address` (4 or 16 bytes).
    static func connect(to address: [UInt8], port: UInt16, deadline: Deadline) throws(SocketFailure) -> DeadlineSocket {
        let start: TCPConnect.Start
        do { start = try TCPConnect.start(address: address, port: port) } catch { throw .failed(error) }
        switch start {
        case .connected(let fd):
            return DeadlineSocket(fd: fd)
        case .failed(let code):
            throw .failed(SystemError(errno: code, call: "connect"))
        case .inProgress(let fd):
            let socket = DeadlineSocket(fd: fd)
            do { try socket.wait(for: .writable, deadline: deadline) } catch {
                fd.close()
                throw error
            }
            guard let code = TCPConnect.outcome(fd) else { return socket }
            fd.close()
            throw .failed(SystemError(errno: code, call: "connect"))
        }
    }

    /// Sends all of `bytes`.
    func sendAll(_ bytes: [UInt8], deadline: Deadline) throws(SocketFailure) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch result {
            case .success(.done(let count)): offset += count
            case .success(.wouldBlock): try wait(for: .writable, deadline: deadline)
            case .failure(let error): throw .failed(error)
            }
        }
    }

    /// Reads what has arrived into `buffer`, waiting for something first; 0 at the end of the stream.
    /// Past the deadline it fails even when bytes are waiting: a peer that never lets a read block
    /// (a response padded without end) must not keep the caller past it.
    func read(into buffer: UnsafeMutableRawBufferPointer, deadline: Deadline) throws(SocketFailure) -> Int {
        guard deadline.pollTimeout != nil else { throw .timedOut }
        while true {
            let result: IOResult<Int>
            do { result = try fd.read(into: buffer) } catch { throw .failed(error) }
            switch result {
            case .done(let count): return count
            case .wouldBlock: try wait(for: .readable, deadline: deadline)
            }
        }
    }

    /// An idle keep-alive connection the peer has not closed (or written to out of turn) since.
    var isIdleAndOpen: Bool { (try? fd.wait(for: .readable, timeoutMilliseconds: 0)) == false }

    func close() { fd.close() }

    private func wait(for readiness: PollReadiness, deadline: Deadline) throws(SocketFailure) {
        guard let timeout = deadline.pollTimeout else { throw .timedOut }
        let ready: Bool
        do { ready = try fd.wait(for: readiness, timeoutMilliseconds: timeout) } catch { throw .failed(error) }
        if !ready { throw .timedOut }
    }
}
