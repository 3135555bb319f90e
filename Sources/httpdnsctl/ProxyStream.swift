import Glibc
import HTTPDNSSystem

/// One non-blocking socket of the proxy, with every wait bounded by a deadline.
struct ProxyStream {
    let fd: FileDescriptor
    /// How long a send may wait for room.
    static let sendTimeoutMilliseconds: Int64 = 60_000

    init(_ fd: FileDescriptor) { self.fd = fd }

    /// Reads up to the blank line that ends a head: the head (without it) and the bytes read
    /// past it. nil when the peer closed, sent more than `ResolvingProxy.maxHead`, or the
    /// deadline passed first.
    mutating func readHead(deadline: Int64) -> (head: [UInt8], rest: [UInt8])? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while bytes.count <= ResolvingProxy.maxHead {
            if let range = bytes.firstRange(of: end) {
                return (Array(bytes[..<range.lowerBound]), Array(bytes[range.upperBound...]))
            }
            switch readSome(into: &chunk) {
            case .data(let count): bytes += chunk[..<count]
            case .end, .failed: return nil
            case .wouldBlock:
                let remaining = deadline - MonotonicClock.nowMilliseconds()
                guard remaining > 0,
                    (try? fd.wait(for: .readable, timeoutMilliseconds: Int32(clamping: remaining))) == true
                else { return nil }
            }
        }
        return nil
    }

    /// Sends all of `bytes`; false when the peer went away or took no byte for a minute.
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try fd.send(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch result {
            case .success(.done(let count)): offset += count
            case .success(.wouldBlock):
                let ready = try? fd.wait(for: .writable, timeoutMilliseconds: Int32(Self.sendTimeoutMilliseconds))
                if ready != true { return false }
            case .failure: return false
            }
        }
        return true
    }

    /// A short plain-text error response.
    func reply(status: String, _ message: String) {
        let body = "httpdnsctl browser proxy: \(message)\n"
        _ = send(
            Array(
                "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                    .utf8))
    }

    enum ReadOutcome {
        case data(Int)
        case end
        case wouldBlock
        case failed
    }

    func readSome(into chunk: inout [UInt8]) -> ReadOutcome {
        let result = chunk.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try fd.read(into: raw) } }
        switch result {
        case .success(.done(0)): return .end
        case .success(.done(let count)): return .data(count)
        case .success(.wouldBlock): return .wouldBlock
        case .failure: return .failed
        }
    }

    /// Copies both ways until both sides finished sending (each end's close is passed on as a
    /// half-close), either failed, or nothing moved for `idleMilliseconds`.
    static func splice(_ a: inout ProxyStream, _ b: inout ProxyStream, idleMilliseconds: Int64) {
        var open = (a: true, b: true)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while open.a || open.b {
            var entries = [
                pollfd(fd: open.a ? a.fd.rawValue : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: open.b ? b.fd.rawValue : -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 2, Int32(idleMilliseconds))
            if ready == 0 { return }
            if ready < 0 {
                if Errno.current == .interrupted { continue }
                return
            }
            for (index, entry) in entries.enumerated() where entry.revents != 0 {
                let (from, to) = index == 0 ? (a, b) : (b, a)
                switch from.readSome(into: &chunk) {
                case .data(let count):
                    guard to.send(Array(chunk[..<count])) else { return }
                case .end:
                    shutdown(to.fd.rawValue, Int32(SHUT_WR))
                    if index == 0 { open.a = false } else { open.b = false }
                case .wouldBlock: continue
                case .failed: return
                }
            }
        }
    }
}
