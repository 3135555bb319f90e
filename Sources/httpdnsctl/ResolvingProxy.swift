import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem
import Synchronization

/// The browser's HTTP proxy on 127.0.0.1 (`--proxy-server`): every host name the browser asks
/// for is resolved through the daemon, so the browser connects to the daemon's addresses
/// (IP-direct) and the daemon remembers which host each address was handed out for. CONNECT is
/// tunnelled (https and wss stay end-to-end encrypted); a plain-http request is forwarded with
/// its target made origin-form, one request per connection.
final class ResolvingProxy: Sendable {
    /// Connections served at once; more wait in the listen queue.
    static let maxConnections = 256
    /// A request head must arrive within this, and be no longer than `maxHead`.
    static let headTimeoutMilliseconds: Int64 = 30_000
    static let maxHead = 64 * 1024
    /// Connecting to one address of the answer.
    static let connectTimeoutMilliseconds: Int64 = 10_000
    /// A tunnel or forwarded exchange with no byte either way for this long is closed.
    static let idleTimeoutMilliseconds: Int64 = 300_000

    let port: UInt16
    private let listener: FileDescriptor
    private let socketPath: String
    private let active = Atomic<Int>(0)
    private let log: @Sendable (String) -> Void

    /// Listens on 127.0.0.1 at a port the kernel picks; `socketPath` is the daemon's.
    init(socketPath: String, log: @escaping @Sendable (String) -> Void) throws(SystemError) {
        let fd = FileDescriptor(
            rawValue: try syscall("socket") {
                socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            })
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        do {
            _ = try syscall("bind") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            _ = try syscall("listen") { listen(fd.rawValue, 128) }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = try syscall("getsockname") {
                withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd.rawValue, $0, &length) }
                }
            }
        } catch {
            fd.close()
            throw error
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        self.socketPath = socketPath
        self.log = log
    }

    /// The `--proxy-server` value.
    var serverArgument: String { "http://127.0.0.1:\(port)" }

    /// Accepts on a thread of its own until the process ends.
    func start() {
        spawnThread(named: "proxy-accept") { [self] in acceptLoop() }
    }

    private func acceptLoop() {
        while true {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let raw = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener.rawValue, $0, &length) }
            }
            guard raw >= 0 else {
                // Out of descriptors: wait for some to close rather than spin.
                if Errno.current != .interrupted { usleep(100_000) }
                continue
            }
            let client = FileDescriptor(rawValue: raw)
            _ = try? client.setCloseOnExec()
            guard active.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                active.subtract(1, ordering: .relaxed)
                client.close()
                continue
            }
            let peerAddress = peer
            spawnThread(named: "proxy-conn") { [self] in
                defer { active.subtract(1, ordering: .relaxed) }
                client.closeAfter { serve(client, peer: peerAddress) }
            }
        }
    }

    private func serve(_ client: FileDescriptor, peer: sockaddr_in) {
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client.rawValue, $0, &length) }
        }
        guard LoopbackPeer.owner(peer: peer, local: local) == getuid() else {
            log("proxy: refused a connection from another user's program")
            return
        }
        guard (try? client.setNonBlocking()) != nil else { return }
        var stream = ProxyStream(client)
        guard let head = stream.readHead(deadline: MonotonicClock.nowMilliseconds() + Self.headTimeoutMilliseconds)
        else { return }
        guard let request = ProxyRequest(head: head.head) else {
            stream.reply(status: "400 Bad Request", "not a proxy request")
            return
        }
        let upstream: FileDescriptor
        switch connect(to: request.host, port: request.port) {
        case .success(let fd): upstream = fd
        case .failure(let failure):
            log("proxy: \(request.host): \(failure.message)")
            stream.reply(status: "502 Bad Gateway", failure.message)
            return
        }
        upstream.closeAfter {
            var origin = ProxyStream(upstream)
            if request.isConnect {
                guard stream.send(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)),
                    origin.send(head.rest)
                else { return }
                ProxyStream.splice(&stream, &origin, idleMilliseconds: Self.idleTimeoutMilliseconds)
            } else {
                guard origin.send(request.originHead + head.rest) else { return }
                let deadline = MonotonicClock.nowMilliseconds() + Self.idleTimeoutMilliseconds
                // The response's head says the connection closes after it, since this one will.
                guard let response = origin.readHead(deadline: deadline),
                    stream.send(ProxyRequest.closingResponseHead(response.head) + response.rest)
                else { return }
                ProxyStream.splice(&stream, &origin, idleMilliseconds: Self.idleTimeoutMilliseconds)
            }
        }
    }

    private func connect(to host: String, port: UInt16) -> Result<FileDescriptor, BrowserFailure> {
        let connection = HTTPDNSConnection(socketPath: socketPath)
        let answer: ResolveResult
        do { answer = try connection.resolve(host: host) } catch {
            return .failure(BrowserFailure("the daemon did not resolve it (\(error.description))"))
        }
        let addresses = (answer.ipv4 + answer.ipv6).compactMap(IPAddressBytes.parse)
        guard !addresses.isEmpty else { return .failure(BrowserFailure("the daemon has no address for it")) }
        var lastFailure = "no address answered"
        for address in addresses {
            switch try? TCPConnect.start(address: address, port: port) {
            case .connected(let fd): return .success(fd)
            case .inProgress(let fd):
                let ready =
                    (try? fd.wait(for: .writable, timeoutMilliseconds: Int32(Self.connectTimeoutMilliseconds))) ?? false
                if ready, TCPConnect.outcome(fd) == nil { return .success(fd) }
                fd.close()
                lastFailure = ready ? "connection refused" : "connect timed out"
            case .failed(let code): lastFailure = "\(code)"
            case nil: lastFailure = "no socket"
            }
        }
        return .failure(BrowserFailure(lastFailure))
    }
}

/// An IP address in text as the 4 or 16 network-order bytes TCPConnect takes.
enum IPAddressBytes {
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
