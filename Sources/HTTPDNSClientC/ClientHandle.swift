import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// What an `httpdns_client *` points to: a connection that one call at a time may use, and the
/// outcome of each thread's last call, which `httpdns_last_error` reports to that thread.
final class ClientHandle: @unchecked Sendable {
    // @unchecked: `connection` is used only under `callLock`, `outcomes` only under `outcomeLock`.
    /// The outcome of one thread's last call; the message is malloc'd and lives until that
    /// thread's next call on the handle, or `httpdns_close`.
    private struct Outcome {
        var code: Int32
        var message: UnsafeMutablePointer<CChar>?
    }

    private let connection: HTTPDNSConnection
    /// Held for a whole call: calls on one handle are serialized.
    private let callLock = ConditionLock()
    private var outcomes: [UInt: Outcome] = [:]
    /// Held only to read or record an outcome, so `httpdns_last_error` never waits for a call.
    private let outcomeLock = ConditionLock()

    init(socketPath: String?) {
        connection = HTTPDNSConnection(socketPath: socketPath)
    }

    deinit {
        for outcome in outcomes.values { free(outcome.message) }
    }

    /// Runs one call with the connection to itself (calls from other threads wait), and records
    /// its outcome for this thread: `body` returns the value for C, or throws the failure, which
    /// `onFailure` turns into the value for C.
    func call<T>(onFailure: (CallFailure) -> T, _ body: (HTTPDNSConnection) throws(CallFailure) -> T) -> T {
        let result: Result<T, CallFailure> = callLock.withLock {
            Result { () throws(CallFailure) in try body(connection) }
        }
        switch result {
        case .success(let value):
            record(0, "")
            return value
        case .failure(let failure):
            record(failure.code, failure.message)
            return onFailure(failure)
        }
    }

    private func record(_ code: Int32, _ message: String) {
        let thread = Self.currentThread
        let copy = strdup(message)
        outcomeLock.withLock {
            free(outcomes[thread]?.message)
            outcomes[thread] = Outcome(code: code, message: copy)
        }
    }

    /// This thread's last outcome: the code, and its message (nil before this thread's first call).
    func lastOutcome() -> (code: Int32, message: UnsafePointer<CChar>?) {
        outcomeLock.withLock {
            let outcome = outcomes[Self.currentThread]
            return (outcome?.code ?? 0, outcome?.message.map { UnsafePointer($0) })
        }
    }

    private static var currentThread: UInt { UInt(pthread_self()) }
}

/// Why a C call failed: the code it returns and the message `httpdns_last_error` gives.
struct CallFailure: Error {
    let code: Int32
    let message: String

    init(_ code: Int32, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: ClientError) {
        code = Self.code(of: error)
        message = AmbiguousAddress(error)?.message ?? error.description
    }

    /// The header's return codes: the daemon's JSON-RPC code, or a negated errno for local failures.
    static func code(of error: ClientError) -> Int32 {
        switch error {
        case .rpc(let rpcError): return Int32(clamping: rpcError.code.rawValue)
        case .unreachable(_, let errno): return -errno.rawValue
        case .timeout: return -ETIMEDOUT
        case .connectionClosed: return -ECONNRESET
        case .malformedResponse: return -EPROTO
        }
    }
}

/// The daemon's ambiguous-address refusal (httpdnsd-rpc(7)): an IP-literal url without host
/// whose address the caller resolved for several names. Its message names them and says what
/// to pass, which the daemon's own sentence leaves to `data.candidates`.
struct AmbiguousAddress {
    let address: String
    let candidates: [String]

    init?(_ error: ClientError) {
        guard case .rpc(let rpc) = error, rpc.data["reason"]?.stringValue == "ambiguous-address" else { return nil }
        address = rpc.data["address"]?.stringValue ?? "the address"
        candidates = (rpc.data["candidates"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    var message: String {
        "\(address) is the address of several host names you resolved (\(candidates.joined(separator: ", "))): "
            + "pass the one meant as host"
    }
}

/// The live handles, so that a NULL, closed or made-up `httpdns_client *` is refused with
/// -EINVAL instead of being dereferenced, and so that a call in progress keeps its handle alive
/// while another thread closes it.
enum HandleRegistry {
    private static let lock = ConditionLock()
    // Only touched under `lock`.
    nonisolated(unsafe) private static var live: [UInt: ClientHandle] = [:]

    static func register(_ handle: ClientHandle) -> OpaquePointer {
        let pointer = Unmanaged.passUnretained(handle).toOpaque()
        lock.withLock { live[UInt(bitPattern: pointer)] = handle }
        return OpaquePointer(pointer)
    }

    /// The handle `pointer` names, retained for the caller; nil when it is not a live handle.
    static func handle(_ pointer: OpaquePointer?) -> ClientHandle? {
        guard let pointer else { return nil }
        return lock.withLock { live[UInt(bitPattern: UnsafeRawPointer(pointer))] }
    }

    /// Forgets the handle; it is freed once no call holds it any more.
    static func remove(_ pointer: OpaquePointer?) {
        guard let pointer else { return }
        // The handle is released outside the lock: its deinit may take a while (closing the socket).
        let removed = lock.withLock { live.removeValue(forKey: UInt(bitPattern: UnsafeRawPointer(pointer))) }
        _ = removed
    }
}

/// A C string argument as Swift text: nil for NULL, a failure for bytes that are not UTF-8
/// (they would reach the daemon altered otherwise).
func text(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CallFailure) -> String? {
    guard let pointer else { return nil }
    guard let value = String(validatingCString: pointer) else { throw CallFailure(-EILSEQ, "\(name) is not UTF-8") }
    return value
}

/// A required C string argument.
func requiredText(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CallFailure) -> String {
    guard let value = try text(pointer, name) else { throw CallFailure(-EINVAL, "\(name) is NULL") }
    return value
}
