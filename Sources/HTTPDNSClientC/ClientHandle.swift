import Glibc
import HTTPDNSClient
import HTTPDNSProtocol

/// What an `httpdns_client *` points to: a connection plus the last call's outcome, which
/// `httpdns_last_error` reports. The message is malloc'd and lives until the next call.
final class ClientHandle {
    let connection: HTTPDNSConnection
    private(set) var lastCode: Int32 = 0
    private(set) var lastMessage: UnsafeMutablePointer<CChar>?

    init(socketPath: String?) {
        connection = HTTPDNSConnection(socketPath: socketPath)
    }

    deinit { free(lastMessage) }

    func succeeded() { record(0, "") }

    /// Records a failure and returns its code, for `return handle.failed(...)`.
    @discardableResult
    func failed(_ code: Int32, _ message: String) -> Int32 {
        record(code, message)
        return code
    }

    @discardableResult
    func failed(_ error: ClientError) -> Int32 {
        failed(Self.code(of: error), error.description)
    }

    private func record(_ code: Int32, _ message: String) {
        free(lastMessage)
        lastCode = code
        lastMessage = strdup(message)
    }

    /// The header's return codes: the daemon's JSON-RPC code, or a negated errno for local failures.
    static func code(of error: ClientError) -> Int32 {
        switch error {
        case .rpc(let rpcError): return Int32(clamping: rpcError.code.rawValue)
        case .unreachable(_, let errno): return -errno
        case .timeout: return -ETIMEDOUT
        case .connectionClosed: return -ECONNRESET
        case .malformedResponse: return -EPROTO
        }
    }

    /// The handle behind an opaque pointer, without taking ownership.
    static func from(_ pointer: OpaquePointer?) -> ClientHandle? {
        guard let pointer else { return nil }
        return Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }
}

/// A C string argument as a Swift string (invalid UTF-8 is repaired, as everywhere in Swift).
func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}
