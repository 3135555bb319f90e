// The property that lets the daemon read requests without a JSON tree: whatever `RequestScanner`
// accepts, `RPCDecoder` reads as the same request (same id, same method, and params that parse to
// the same typed value or fail with the same error). Shared by the seeded fuzz test and the
// libFuzzer target (Tests/fuzz/run.sh compiles this file into its harness).
import HTTPDNSProtocol

/// How one line was read on the fast lane, for comparison with the tree.
enum ScannerVerdict {
    /// The scanner gave up: the line goes to `RPCDecoder` alone.
    case declined
    /// Both read the same request.
    case agreed
    /// They differ; the text says how.
    case disagreed(String)
}

/// Reads `line` with the scanner and with the decoder, and compares.
func compareScannerWithDecoder(_ line: UnsafeBufferPointer<UInt8>) -> ScannerVerdict {
    var scanner = RequestScanner()
    guard let fast = scanner.scan(line) else { return .declined }
    guard case .single(.request(let slow)) = RPCDecoder.decode(line: line, maxBatch: 16) else {
        return .disagreed("the scanner read a request where the decoder did not")
    }
    guard Method(rawValue: slow.method) == fast.method else {
        return .disagreed("method \(fast.method.rawValue) against \(slow.method)")
    }
    guard slow.id == fast.id else {
        return .disagreed("id \(String(describing: fast.id)) against \(String(describing: slow.id))")
    }
    let fastParams = typedParams(fast.method, fast.params)
    let slowParams = typedParams(fast.method, Params(slow.params))
    switch (fastParams, slowParams) {
    case (.success(let a), .success(let b)):
        return sameParams(a, b) ? .agreed : .disagreed("params \(a) against \(b)")
    case (.failure(let a), .failure(let b)):
        return a == b ? .agreed : .disagreed("error \(a.message) against \(b.message)")
    default:
        return .disagreed("params \(fastParams) against \(slowParams)")
    }
}

private func typedParams(_ method: Method, _ params: Params) -> Result<any MethodParams, RPCError> {
    do throws(RPCError) {
        return .success(try method.paramsType.init(params))
    } catch {
        return .failure(error)
    }
}

private func sameParams(_ a: any MethodParams, _ b: any MethodParams) -> Bool {
    func equal<P: MethodParams>(_ a: P) -> Bool { (b as? P) == a }
    return equal(a)
}
