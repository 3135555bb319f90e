// libFuzzer entry points of the multi-target harness that run.sh builds: HTTPDNSProtocol as its own
// module, the HTTPDNSCore sources compiled into this one (so every target reaches Core's internals),
// and one target per parser. HTTPDNS_FUZZ_TARGET names the target a process runs; each target checks
// invariants on every input, and any violation traps, which libFuzzer reports as a crash with its input.

import Glibc

/// One parser under test: its name (the corpus directory's), what it covers, and the check run per input.
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let check: @Sendable (UnsafeBufferPointer<UInt8>) -> Void
}

/// Every target, in the order run.sh runs them.
let fuzzTargets: [FuzzTarget] =
    protocolTargets + cookieTargets + configTargets + upstreamTargets + fleetTargets + urlTargets + streamTargets
    + networkTargets

/// Set once by `LLVMFuzzerInitialize`, before libFuzzer's first input; read-only afterwards.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

/// fatalError, unlike precondition, prints its message in -O builds, so a crash report says which invariant broke
/// and where.
@inline(__always)
func require(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition { fatalError(message(), file: file, line: line) }
}

/// Picks the target named by HTTPDNS_FUZZ_TARGET; `list` prints every target and exits.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
    let name = getenv("HTTPDNS_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    if name == "list" {
        for target in fuzzTargets { print("\(target.name)\t\(target.summary)") }
        exit(0)
    }
    guard let target = fuzzTargets.first(where: { $0.name == name }) else {
        let names = fuzzTargets.map(\.name).joined(separator: " ")
        let message = "HTTPDNS_FUZZ_TARGET must name a target (or be \"list\"): \(names)\n"
        _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget?.check(UnsafeBufferPointer(start: size == 0 ? nil : data, count: size))
    return 0
}
