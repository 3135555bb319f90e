import Glibc
import HTTPDNSRedis
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization

/// A Redis stand-in for replies no real Redis sends: `SCRIPT LOAD` gets a digest, each
/// `EVALSHA` the text `scriptReply` gives for its number (from 0), anything else `+OK`. One
/// connection at a time, on its own thread, until `stop()`.
final class ScriptedRedis: Sendable {
    let socketPath: String
    private let listener: FileDescriptor
    private let evaluations = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let scriptReply: @Sendable (Int) -> String

    init(in directory: TemporaryDirectory, scriptReply: @escaping @Sendable (Int) -> String) throws {
        socketPath = directory.file("scripted-redis.sock")
        listener = try UnixSocket.listen(path: socketPath)
        self.scriptReply = scriptReply
        _ = spawnThread { [self] in serve() }
    }

    /// Ends the serving thread once its client has gone, and with it the listening socket (the
    /// thread holds this object, so no deinit could).
    func stop() { stopping.store(true, ordering: .relaxed) }

    /// How many `EVALSHA` were answered.
    var evaluationCount: Int { evaluations.load(ordering: .relaxed) }

    private func serve() {
        while !stopping.load(ordering: .relaxed) {
            var ready = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0, case .done(let client)? = try? UnixSocket.accept(listener) else { continue }
            answer(client)
            client.close()
        }
        listener.close()
    }

    private func answer(_ client: FileDescriptor) {
        try? client.setNonBlocking(false)
        var reader = RESPReader()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !stopping.load(ordering: .relaxed) {
            let read = buffer.withUnsafeMutableBytes { try? client.read(into: $0) }
            guard case .done(let count)? = read, count > 0 else { return }
            buffer.withUnsafeBytes { reader.feed(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            while case .reply(let command) = reader.next() {
                let name = command.array?.first?.text?.uppercased() ?? ""
                let reply: String
                switch name {
                case "SCRIPT": reply = "$40\r\n" + String(repeating: "0", count: 40) + "\r\n"
                case "EVALSHA", "EVAL": reply = scriptReply(evaluations.add(1, ordering: .relaxed).oldValue)
                default: reply = "+OK\r\n"
                }
                guard (try? client.writeAll(Array(reply.utf8))) != nil else { return }
            }
        }
    }
}
