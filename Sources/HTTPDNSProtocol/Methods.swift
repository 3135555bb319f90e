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

    /// Its position in `allCases` (for counters and tables kept in an array): a case without a
    /// payload is stored as its index in declaration order, which `MethodDeclarationTests` pins.
    @inlinable
    public var ordinal: Int { Int(unsafeBitCast(self, to: UInt8.self)) }

    /// What the contract declares of the method besides its members: the one place a method's
    /// types and nature are written.
    public var declaration: MethodDeclaration {
        switch self {
        case .resolve: MethodDeclaration(ResolveParams.self, ResolveResult.self, hasEffects: true)
        case .reverse: MethodDeclaration(ReverseParams.self, ReverseResult.self, hasEffects: false)
        case .getCookieHeader: MethodDeclaration(GetCookieHeaderParams.self, CookieHeaderResult.self, hasEffects: false)
        case .handleSetCookie: MethodDeclaration(HandleSetCookieParams.self, SetCookieResult.self, hasEffects: true)
        case .deleteCookies: MethodDeclaration(DeleteCookiesParams.self, DeleteCookiesResult.self, hasEffects: true)
        case .listCookies: MethodDeclaration(ListCookiesParams.self, ListCookiesResult.self, hasEffects: false)
        case .importCookies: MethodDeclaration(ImportCookiesParams.self, ImportCookiesResult.self, hasEffects: true)
        case .exportCookies: MethodDeclaration(ExportCookiesParams.self, ExportCookiesResult.self, hasEffects: false)
        case .forget: MethodDeclaration(ForgetParams.self, ForgetResult.self, hasEffects: true)
        case .flushCache: MethodDeclaration(FlushCacheParams.self, FlushCacheResult.self, hasEffects: true)
        case .status: MethodDeclaration(StatusParams.self, StatusResult.self, hasEffects: false)
        case .showCache: MethodDeclaration(ShowCacheParams.self, ShowCacheResult.self, hasEffects: false)
        case .statistics: MethodDeclaration(StatisticsParams.self, StatisticsResult.self, hasEffects: false)
        case .resetStatistics:
            MethodDeclaration(ResetStatisticsParams.self, ResetStatisticsResult.self, hasEffects: true)
        case .metrics: MethodDeclaration(MetricsParams.self, MetricsResult.self, hasEffects: false)
        case .monitor: MethodDeclaration(MonitorParams.self, MonitorResult.self, hasEffects: false)
        case .discover: MethodDeclaration(DiscoverParams.self, DiscoverResult.self, hasEffects: false)
        }
    }

    /// The type of this method's params.
    public var paramsType: any MethodParams.Type { declaration.paramsType }

    /// The type of this method's result.
    public var resultType: any MethodResult.Type { declaration.resultType }

    /// Whether running it changes something besides its answer: the jar, the cache, the
    /// counters, an upstream query (a resolve also feeds the address memory normalization reads).
    /// A method without effects may be skipped when nobody will read its answer.
    public var hasEffects: Bool { declaration.hasEffects }
}

/// A method's params and result types and whether it has effects (`Method.declaration`).
public struct MethodDeclaration: Sendable {
    public let paramsType: any MethodParams.Type
    public let resultType: any MethodResult.Type
    public let hasEffects: Bool

    init(_ paramsType: any MethodParams.Type, _ resultType: any MethodResult.Type, hasEffects: Bool) {
        self.paramsType = paramsType
        self.resultType = resultType
        self.hasEffects = hasEffects
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
