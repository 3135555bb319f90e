import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem

/// A line-oriented client over a real Unix socket, for speaking raw protocol bytes.
public final class LineClient {
    public let fd: FileDescriptor
    private var framer = LineFramer(maxLineLength: 64 << 20)
    private var lines: [String] = []
    public private(set) var reachedEOF = false

    public init(path: String) throws {
        _ = BrokenPipes.ignored
        fd = try UnixSocket.connect(path: path)
    }

    deinit { fd.close() }

    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd.rawValue, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if Errno.current == .interrupted { continue }
                throw SystemError(errno: .current, call: "send")
            }
            offset += n
        }
    }

    /// Sends `line` plus a newline.
    public func sendLine(_ line: String) throws { try send(line + "\n") }

    /// Half-closes the connection: the daemon reads end of file, and may still answer.
    public func shutdownWrite() { UnixSocket.shutdownWrite(fd) }

    /// The next line, or nil at EOF or after `timeout` seconds.
    public func readLine(timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while lines.isEmpty {
            if reachedEOF { return nil }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var pfd = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(max(1, remaining * 1000))) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { raw in recv(fd.rawValue, raw.baseAddress, raw.count, 0) }
            if n <= 0 {
                reachedEOF = true
                continue
            }
            framer.append(Array(buffer[0..<n]))
            framer.drain { event in
                if case .line(let line) = event { lines.append(String(decoding: line, as: UTF8.self)) }
            }
        }
        return lines.removeFirst()
    }

    /// The next line parsed as JSON.
    public func readJSON(timeout: Double = 10) -> JSON? {
        guard let line = readLine(timeout: timeout) else { return nil }
        return try? JSONParser.parse(line)
    }

    /// Sends one request and returns the response with its id (other lines are kept for later).
    public func call(_ method: String, _ params: JSON = .object(JSONObject()), id: Int = 1) throws -> JSON? {
        let request: JSON = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method), "params": params]
        try sendLine(request.encodedString)
        return readJSON()
    }
}

extension UnixSocket {
    /// Half-closes the sending direction of a connected socket (the peer reads end of file).
    public static func shutdownWrite(_ fd: FileDescriptor) {
        _ = Glibc.shutdown(fd.rawValue, Int32(SHUT_WR))
    }
}
