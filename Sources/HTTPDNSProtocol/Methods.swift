/// The methods of the contract (httpdnsd-rpc(7)), each with one params type and one result type in this
/// module. The daemon parses params and writes results with these types, and the clients build
/// params and read results with them, so every side agrees by construction.
public enum Method: String, CaseIterable, Sendable {
    case resolve
    case reverse
    case getCookieHeader
    case handleSetCookie
    case deleteCookies
    case listCookies
    case importCookies
    case exportCookies
    case flushCache
    case status
    case discover = "rpc.discover"

    /// The type of this method's params.
    public var paramsType: any MethodParams.Type {
        switch self {
        case .resolve: return ResolveParams.self
        case .reverse: return ReverseParams.self
        case .getCookieHeader: return GetCookieHeaderParams.self
        case .handleSetCookie: return HandleSetCookieParams.self
        case .deleteCookies: return DeleteCookiesParams.self
        case .listCookies: return ListCookiesParams.self
        case .importCookies: return ImportCookiesParams.self
        case .exportCookies: return ExportCookiesParams.self
        case .flushCache: return FlushCacheParams.self
        case .status: return StatusParams.self
        case .discover: return DiscoverParams.self
        }
    }

    /// The type of this method's result.
    public var resultType: any MethodResult.Type {
        switch self {
        case .resolve: return ResolveResult.self
        case .reverse: return ReverseResult.self
        case .getCookieHeader: return CookieHeaderResult.self
        case .handleSetCookie: return SetCookieResult.self
        case .deleteCookies: return DeleteCookiesResult.self
        case .listCookies: return ListCookiesResult.self
        case .importCookies: return ImportCookiesResult.self
        case .exportCookies: return ExportCookiesResult.self
        case .flushCache: return FlushCacheResult.self
        case .status: return StatusResult.self
        case .discover: return DiscoverResult.self
        }
    }
}

/// The by-name params of one method.
public protocol MethodParams: Sendable, Equatable {
    /// Reads params as the daemon receives them: -32602 naming the first offending member.
    init(_ params: Params) throws(RPCError)
    /// The params as a client sends them.
    var json: JSONObject { get }
}

/// The result of one method.
public protocol MethodResult: Sendable, Equatable {
    /// Appends the compact JSON the daemon sends, straight into its output (no `JSON` tree).
    func write(to out: inout JSONOutput)
    /// Reads a result as a client receives it; nil when it does not match the contract.
    init?(json: JSON)
}

extension MethodResult {
    /// The compact JSON encoding.
    public var encoded: [UInt8] {
        var out = JSONOutput()
        write(to: &out)
        return out.bytes
    }

    /// The result as a JSON value, read back from its encoding (for clients and tests; the
    /// daemon writes results straight to its output).
    public var json: JSON { (try? JSONParser.parse(encoded, maxDepth: 128)) ?? .null }
}

/// Params of the methods that take none (`status`, `rpc.discover`): any params object is accepted.
public struct NoParams: MethodParams {
    public init() {}
    public init(_ params: Params) throws(RPCError) {}
    public var json: JSONObject { JSONObject() }
}

public typealias StatusParams = NoParams
public typealias DiscoverParams = NoParams

/// Reads `{"<member>": <non-negative integer>}` results.
func nonNegativeInteger(_ member: String, in json: JSON) -> Int? {
    guard let value = json[member]?.numberValue?.int64Value, value >= 0, value <= Int64(Int.max) else { return nil }
    return Int(value)
}
