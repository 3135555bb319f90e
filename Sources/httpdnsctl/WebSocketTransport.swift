import Glibc
import HTTPDNSSystem

/// CDP over a WebSocket (RFC 6455) to a browser's `--remote-debugging-port` on 127.0.0.1, for
/// `browser attach`. Any local user can connect to a loopback port, so the endpoint is used only
/// when its socket is the caller's own: the caller's cookies must never go into another user's
/// browser.
final class WebSocketTransport: DevToolsTransport {
    private let socket: FileDescriptor
    private var received: [UInt8] = []
    /// The fragments of a message not yet complete.
    private var partial: [UInt8] = []
    private(set) var closed = false

    /// How long connecting and the opening handshake may take.
    static let openTimeoutMilliseconds: Int64 = 10_000

    /// `ws://127.0.0.1:PORT/PATH` (or `localhost`) split up; nil for any other form.
    static func endpoint(_ text: String) -> (port: UInt16, path: String)? {
        guard text.hasPrefix("ws://") else { return nil }
        let rest = text.dropFirst("ws://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard let colon = authority.lastIndex(of: ":"),
            ["127.0.0.1", "localhost"].contains(authority[..<colon].lowercased()),
            let port = UInt16(authority[authority.index(after: colon)...]), port != 0
        else { return nil }
        return (port, slash == rest.endIndex ? "/" : String(rest[slash...]))
    }

    /// Connects, checks the owner of the browser's end, and opens the WebSocket.
    init(port: UInt16, path: String) throws(BrowserFailure) {
        let deadline = MonotonicClock.nowMilliseconds() + Self.openTimeoutMilliseconds
        let loopback: [UInt8] = [127, 0, 0, 1]
        let fd: FileDescriptor
        switch try? TCPConnect.start(address: loopback, port: port) {
        case .connected(let connected): fd = connected
        case .inProgress(let pending):
            let ready = (try? pending.wait(for: .writable, timeoutMilliseconds: Int32(Self.openTimeoutMilliseconds)))
            guard ready == true, TCPConnect.outcome(pending) == nil else {
                pending.close()
                throw BrowserFailure("cannot connect to 127.0.0.1:\(port)")
            }
            fd = pending
        case .failed(let code): throw BrowserFailure("cannot connect to 127.0.0.1:\(port): \(code)")
        case nil: throw BrowserFailure("cannot make a socket")
        }
        socket = fd
        do {
            try checkOwner(port: port)
            try handshake(path: path, port: port, deadline: deadline)
        } catch {
            fd.close()
            throw error
        }
    }

    deinit { socket.close() }

    var readable: FileDescriptor { socket }

    /// The browser's end of this connection must be a socket of the caller's uid.
    private func checkOwner(port: UInt16) throws(BrowserFailure) {
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.rawValue, $0, &length) }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        remote.sin_port = port.bigEndian
        let owner = LoopbackPeer.owner(peer: remote, local: local)
        guard let owner else { throw BrowserFailure("cannot tell whose 127.0.0.1:\(port) is (/proc/net/tcp)") }
        guard owner == getuid() else {
            throw BrowserFailure("127.0.0.1:\(port) belongs to uid \(owner), not to you: your cookies stay out of it")
        }
    }

    private func handshake(path: String, port: UInt16, deadline: Int64) throws(BrowserFailure) {
        var key = [UInt8](repeating: 0, count: 16)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        let request =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Base64.encode(key))\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try sendRaw(Array(request.utf8), deadline: deadline)
        var stream = ProxyStream(socket)
        guard let (head, rest) = stream.readHead(deadline: deadline) else {
            throw BrowserFailure("the endpoint did not answer the WebSocket handshake")
        }
        let status = String(decoding: head.prefix { $0 != 0x0D }, as: UTF8.self)
        guard status.hasPrefix("HTTP/1.1 101") else {
            throw BrowserFailure("the endpoint refused the WebSocket: \(status)")
        }
        received = rest
    }

    func send(_ message: [UInt8], deadline: Int64) throws(BrowserFailure) {
        // A client's frames are masked (RFC 6455 section 5.3).
        var frame: [UInt8] = [0x81]
        if message.count < 126 {
            frame.append(0x80 | UInt8(message.count))
        } else if message.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(message.count >> 8), UInt8(message.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                frame.append(UInt8((UInt64(message.count) >> UInt64(shift)) & 0xFF))
            }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame.reserveCapacity(frame.count + message.count)
        for (index, byte) in message.enumerated() { frame.append(byte ^ mask[index & 3]) }
        try sendRaw(frame, deadline: deadline)
    }

    private func sendRaw(_ bytes: [UInt8], deadline: Int64) throws(BrowserFailure) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try socket.send(UnsafeRawBufferPointer(rebasing: raw[offset...])) }
            }
            switch result {
            case .success(.done(let count)): offset += count
            case .success(.wouldBlock):
                try DevToolsPipe.wait(for: .writable, on: socket, until: deadline, doing: "a command")
            case .failure:
                closed = true
                throw BrowserFailure("the browser closed its DevTools connection")
            }
        }
    }

    func receive(until deadline: Int64?) throws(BrowserFailure) -> [[UInt8]] {
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let messages = try takeFrames()
            if !messages.isEmpty { return messages }
            if closed { throw BrowserFailure("the browser closed its DevTools connection") }
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try socket.read(into: raw) }
            }
            switch result {
            case .success(.done(0)), .failure: closed = true
            case .success(.done(let count)): received += chunk[..<count]
            case .success(.wouldBlock):
                guard let deadline else { return [] }
                try DevToolsPipe.wait(for: .readable, on: socket, until: deadline, doing: "a command")
            }
        }
    }

    /// The complete messages among the frames received; pings are answered, a close ends it.
    private func takeFrames() throws(BrowserFailure) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while received.count >= 2 {
            let opcode = received[0] & 0x0F
            let final = received[0] & 0x80 != 0
            var length = Int(received[1] & 0x7F)
            var offset = 2
            if length == 126 {
                guard received.count >= 4 else { break }
                length = Int(received[2]) << 8 | Int(received[3])
                offset = 4
            } else if length == 127 {
                guard received.count >= 10 else { break }
                var value: UInt64 = 0
                for byte in received[2..<10] { value = value << 8 | UInt64(byte) }
                guard value <= UInt64(DevToolsPipe.maxMessageLength) else {
                    throw BrowserFailure(
                        "the browser sent a message longer than \(DevToolsPipe.maxMessageLength) bytes")
                }
                length = Int(value)
                offset = 10
            }
            if received[1] & 0x80 != 0 { throw BrowserFailure("the browser sent a masked frame") }
            guard received.count >= offset + length else { break }
            let payload = Array(received[offset..<(offset + length)])
            received.removeSubrange(..<(offset + length))
            switch opcode {
            case 0x0, 0x1, 0x2:
                partial += payload
                guard partial.count <= DevToolsPipe.maxMessageLength else {
                    throw BrowserFailure(
                        "the browser sent a message longer than \(DevToolsPipe.maxMessageLength) bytes")
                }
                if final {
                    messages.append(partial)
                    partial = []
                }
            case 0x8:
                closed = true
                return messages
            case 0x9:
                var pong: [UInt8] = [0x8A, 0x80 | UInt8(min(payload.count, 125))]
                let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
                pong += mask
                for (index, byte) in payload.prefix(125).enumerated() { pong.append(byte ^ mask[index & 3]) }
                try sendRaw(pong, deadline: MonotonicClock.nowMilliseconds() + DevToolsPipe.callTimeoutMilliseconds)
            default:
                continue
            }
        }
        return messages
    }
}

/// RFC 4648 base64, for the WebSocket key.
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[(value >> (18 - 6 * position)) & 63] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
