import Glibc
import HTTPDNSSystem
import Synchronization

/// A Unix-socket proxy in front of another Unix socket, for tests of a slow path to a server
/// (Redis): it forwards both ways, the server's bytes at once or, while `trickle` is set, one
/// byte per interval, and counts the bytes it forwarded to the clients. A thread per
/// connection; `stop()` (or deinit) ends them.
public final class SocketProxy: Sendable {
    public let socketPath: String
    private let target: String
    private let listener: FileDescriptor
    private struct State {
        var trickleMilliseconds: Int?
        var bytesToClients = 0
        var stopping = false
        var threads: [pthread_t] = []
    }
    private let state = Mutex(State())

    /// Listens on `name` in `directory` and forwards each connection to `target`.
    public init(to target: String, in directory: TemporaryDirectory, name: String = "proxy.sock") throws {
        self.target = target
        socketPath = directory.file(name)
        unlink(socketPath)
        listener = try UnixSocket.listen(path: socketPath)
        let thread = spawnThread(joinable: true) { [self] in self.acceptLoop() }
        state.withLock { $0.threads.append(thread) }
    }

    deinit { stop() }

    /// While set, the server's bytes go to the client one per this many milliseconds.
    public var trickleMilliseconds: Int? {
        get { state.withLock { $0.trickleMilliseconds } }
        set { state.withLock { $0.trickleMilliseconds = newValue } }
    }

    /// Bytes forwarded from the server to the clients so far.
    public var bytesToClients: Int { state.withLock { $0.bytesToClients } }

    public func stop() {
        let acceptor: pthread_t? = state.withLock { state in
            guard !state.stopping else { return nil }
            state.stopping = true
            return state.threads.first
        }
        guard let acceptor else { return }
        // The acceptor first: once it is gone, no connection thread is added.
        pthread_join(acceptor, nil)
        for thread in state.withLock({ $0.threads.dropFirst() }) { pthread_join(thread, nil) }
        listener.close()
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func acceptLoop() {
        while !stopping {
            var ready = pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            guard case .done(let client)? = try? UnixSocket.accept(listener) else { continue }
            guard let server = try? UnixSocket.connect(path: target) else {
                client.close()
                continue
            }
            let thread = spawnThread(joinable: true) { [self] in self.forward(client: client, server: server) }
            state.withLock { $0.threads.append(thread) }
        }
    }

    private func forward(client: FileDescriptor, server: FileDescriptor) {
        defer {
            client.close()
            server.close()
        }
        try? client.setNonBlocking(false)
        try? server.setNonBlocking(false)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !stopping {
            var fds = [
                pollfd(fd: client.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: server.rawValue, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&fds, 2, 50) > 0 else { continue }
            if fds[0].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(client.rawValue, $0.baseAddress, $0.count) }
                guard n > 0, (try? server.writeAll(Array(buffer[0..<n]))) != nil else { return }
            }
            if fds[1].revents != 0 {
                let trickle = trickleMilliseconds
                let n = buffer.withUnsafeMutableBytes {
                    Glibc.read(server.rawValue, $0.baseAddress, trickle == nil ? $0.count : 1)
                }
                guard n > 0, (try? client.writeAll(Array(buffer[0..<n]))) != nil else { return }
                state.withLock { $0.bytesToClients += n }
                if let trickle { usleep(UInt32(trickle) * 1_000) }
            }
        }
    }
}
