/// Why a resolution ended without an answer: what a `-32002` reply's `data.reason` says.
///
/// It travels as a value from the upstream attempt to the reply, so nothing has to read a reason
/// back out of an error object. Its description is one line, safe for logs (`UpstreamError`'s
/// description never carries a secret).
public enum ResolutionFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The caller's own wait ended first (its `timeoutMs`, else `Timeout=`).
    case timedOut(milliseconds: Int)
    /// The last upstream tried failed; `upstream` is its configured name.
    case upstreamFailed(upstream: String, UpstreamError)
    /// The deadline passed before any upstream could be asked.
    case noUpstreamAsked

    public var description: String {
        switch self {
        case .timedOut(let milliseconds): return "timed out after \(milliseconds) ms"
        case .upstreamFailed(let upstream, let error): return "\(upstream): \(error)"
        case .noUpstreamAsked: return "no upstream could be tried within the timeout"
        }
    }
}
