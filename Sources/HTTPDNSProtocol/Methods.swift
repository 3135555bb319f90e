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
    case forget
    case flushCache
    case status
    case showCache
    case statistics
    case resetStatistics
    case metrics
    case monitor
    case discover = "rpc.discover"

    /// Its position in `allCases` (for counters kept in an array).
    public var ordinal: Int {
        switch self {
        case .resolve: return 0
        case .reverse: return 1
        case .getCookieHeader: return 2
        case .handleSetCookie: return 3
        case .deleteCookies: return 4
        case .listCookies: return 5
        case .importCookies: return 6
        case .exportCookies: return 7
        case .forget: return 8
        case .flushCache: return 9
        case .status: return 10
        case .showCache: return 11
        case .statistics: return 12
        case .resetStatistics: return 13
        case .metrics: return 14
        case .monitor: return 15
        case .discover: return 16
        }
    }

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
        case .forget: return ForgetParams.self
        case .flushCache: return FlushCacheParams.self
        case .status: return StatusParams.self
        case .showCache: return ShowCacheParams.self
        case .statistics: return StatisticsParams.self
        case .resetStatistics: return ResetStatisticsParams.self
        case .metrics: return MetricsParams.self
        case .monitor: return MonitorParams.self
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
        case .forget: return ForgetResult.self
        case .flushCache: return FlushCacheResult.self
        case .status: return StatusResult.self
        case .showCache: return ShowCacheResult.self
        case .statistics: return StatisticsResult.self
        case .resetStatistics: return ResetStatisticsResult.self
        case .metrics: return MetricsResult.self
        case .monitor: return MonitorResult.self
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
    /// The members, as the OpenRPC document lists them.
    static var memberSchemas: [MemberSchema] { get }
}

/// The result of one method: a JSON object.
public protocol MethodResult: JSONRecord {}

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
public struct NoParams: DescribedParams {
    public init() {}
    public static let blank = NoParams()
    public static let fields: [ParamField<NoParams>] = []
}

public typealias StatusParams = NoParams
public typealias DiscoverParams = NoParams

/// The range of a count: an integer a result promises is never negative.
let nonNegative: ClosedRange<Int64> = 0...Int64.max
