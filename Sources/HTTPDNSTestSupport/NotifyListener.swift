import Foundation
import Glibc
import HTTPDNSSystem

/// A NOTIFY_SOCKET the test owns: the daemon's sd_notify datagrams arrive here.
public final class NotifyListener: @unchecked Sendable {
    // @unchecked: `messages` is only touched under `lock`; the fd is read by one thread.
    public let path: String
    private let fd: FileDescriptor
    private let lock = NSLock()
    private var messages: [String] = []

    public init(path: String) throws {
        self.path = path
        fd = try Self.bindDatagram(path: path)
    }

    deinit { fd.close() }

    /// Every message received so far (each may hold several `KEY=VALUE` lines).
    public var received: [String] {
        drain()
        return lock.withLock { messages }
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(fd.rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT))
            }
            if n <= 0 { return }
            let text = String(decoding: buffer[0..<n], as: UTF8.self)
            lock.withLock { messages.append(text) }
        }
    }

    /// Waits until some message contains `line` (e.g. "READY=1"); true when it came in time.
    /// Blocks on the socket between checks, so it returns as soon as the datagram arrives.
    public func waitFor(_ line: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if indexOf(line) != nil { return true }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            _ = try? fd.wait(for: .readable, timeoutMilliseconds: Int32(max(1, remaining * 1_000)))
        }
    }

    /// Index of the first message holding `line`, for ordering checks.
    public func indexOf(_ line: String) -> Int? {
        received.firstIndex { $0.split(separator: "\n").contains(Substring(line)) }
    }

    /// A Unix datagram socket bound at `path` (a stale file there is replaced).
    private static func bindDatagram(path: String) throws(SystemError) -> FileDescriptor {
        unlink(path)
        let fd = FileDescriptor(
            rawValue: try syscall("socket") {
                Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            })
        do {
            let result = try UnixSocket.withAddress(path) { address, length in
                Result { () throws(SystemError) in
                    try syscall("bind \(path)") { Glibc.bind(fd.rawValue, address, length) }
                }
            }
            _ = try result.get()
        } catch {
            fd.close()
            throw error
        }
        return fd
    }
}
