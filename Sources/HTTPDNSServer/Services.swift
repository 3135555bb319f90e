import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// Everything the methods work on, owned by the loop thread.
final class Services {
    private unowned let daemon: Daemon

    init(daemon: Daemon) throws {
        self.daemon = daemon
    }

    func registerMethods(on server: RPCServer) {
        server.register(.discover) { _, _, done in done(.rawResult(Array(OpenRPCDocument.text.utf8))) }
        server.register(.status) { [unowned self] _, _, done in done(.result(self.status())) }
    }

    /// No upstream query or store write is still running.
    var isQuiescent: Bool { true }

    var statusSummary: String { "ready" }

    func status() -> JSON {
        var o = JSONObject()
        o.append("version", .string(Daemon.version))
        o.append("uptime", .int64(daemon.uptimeSeconds))
        return .object(o)
    }

    func shutdown() {}
}
