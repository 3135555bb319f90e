import HTTPDNSCore
import HTTPDNSIDNA
import HTTPDNSProtocol
import HTTPDNSSystem

/// Who is calling, as the kernel says (SO_PEERCRED at accept time).
public struct CallContext: Sendable {
    public let peer: PeerCredentials
    public let connectionID: UInt64
    /// The uid the caller's bounds are charged to: the owner of a subordinate uid, else the
    /// peer's own (`SubordinateIDs`). Jars and address memory stay the peer uid's.
    public let account: UInt32

    public init(peer: PeerCredentials, connectionID: UInt64, account: UInt32? = nil) {
        self.peer = peer
        self.connectionID = connectionID
        self.account = account ?? peer.uid
    }
}

/// Delivers a method's outcome; called exactly once, now or later, on the loop thread.
///
/// A value over the request's `Responder` rather than a closure: a closure is a heap context
/// for every request, and most are answered before `dispatch` returns.
struct Reply<Result: MethodResult> {
    let responder: Responder

    func callAsFunction(_ outcome: consuming Swift.Result<Result, RPCError>) {
        responder.reply(outcome)
    }

    /// Charges the caller's uid for work the request turned out to need.
    func charge(_ units: Int) {
        responder.connection.charge(units)
    }

    /// Whether anyone reads the answer: false for a notification, whose answer is dropped (a
    /// method without side effects may skip its work; its cost is charged all the same).
    var isRead: Bool { responder.id != nil }

    /// Answers with a result written as the client reads it (a large one: `listCookies`,
    /// `exportCookies`); its snapshot is charged to the caller's uid until it is written.
    func stream(_ result: some ResultStream) {
        responder.stream(result)
    }

    /// Answers with what `source` writes as it has it, a line at a time, for as long as the
    /// connection lives (a subscription: the request is answered, the source goes on).
    func open(_ source: some AnswerSource) {
        responder.open(source)
    }
}

/// The typed implementation of every method of the contract: what the server's dispatch calls.
/// The daemon's `Services` is one; in-process tests bring their own.
///
/// A function either throws before replying or replies (once), never both. Params are parsed
/// before the call, so the implementations never see a `Params`.
protocol MethodTable: AnyObject {
    func resolve(_ params: ResolveParams, context: CallContext, reply: Reply<ResolveResult>)
        throws(RPCError)
    func reverse(_ params: ReverseParams, context: CallContext, reply: Reply<ReverseResult>)
        throws(RPCError)
    func getCookieHeader(
        _ params: consuming CookieHeaderQuery, context: CallContext, reply: Reply<CookieHeaderResult>
    ) throws(RPCError)
    func handleSetCookie(_ params: consuming SetCookieQuery, context: CallContext, reply: Reply<SetCookieResult>)
        throws(RPCError)
    func deleteCookies(
        _ params: DeleteCookiesParams, context: CallContext, reply: Reply<DeleteCookiesResult>
    ) throws(RPCError)
    func listCookies(_ params: ListCookiesParams, context: CallContext, reply: Reply<ListCookiesResult>)
        throws(RPCError)
    func importCookies(
        _ params: ImportCookiesParams, context: CallContext, reply: Reply<ImportCookiesResult>
    ) throws(RPCError)
    func exportCookies(
        _ params: ExportCookiesParams, context: CallContext, reply: Reply<ExportCookiesResult>
    ) throws(RPCError)
    func forget(_ params: ForgetParams, context: CallContext, reply: Reply<ForgetResult>) throws(RPCError)
    func flushCache(_ params: FlushCacheParams, context: CallContext, reply: Reply<FlushCacheResult>)
        throws(RPCError)
    func status(_ params: StatusParams, context: CallContext, reply: Reply<StatusResult>) throws(RPCError)
    func showCache(_ params: ShowCacheParams, context: CallContext, reply: Reply<ShowCacheResult>)
        throws(RPCError)
    func statistics(_ params: StatisticsParams, context: CallContext, reply: Reply<StatisticsResult>)
        throws(RPCError)
    func resetStatistics(
        _ params: ResetStatisticsParams, context: CallContext, reply: Reply<ResetStatisticsResult>
    ) throws(RPCError)
    func metrics(_ params: MetricsParams, context: CallContext, reply: Reply<MetricsResult>) throws(RPCError)
    /// Answers, then goes on writing events on the connection (`Reply.open`).
    func monitor(_ params: MonitorParams, context: CallContext, reply: Reply<MonitorResult>) throws(RPCError)
    func discover(_ params: DiscoverParams, context: CallContext, reply: Reply<DiscoverResult>)
        throws(RPCError)

    /// What running `method` for `context`'s uid costs beyond reading its line, in work units
    /// (`WorkCost`): the methods that walk a whole jar or the cache cost with its size.
    func workUnits(of method: Method, context: CallContext) -> Int
}

extension MethodTable {
    func workUnits(of method: Method, context: CallContext) -> Int { 0 }

}

/// getCookieHeader's params with the URL parsed from the request's bytes (a refusal: not a URL the
/// jar serves, or an ambiguous one, refused by the method after every member was read).
typealias CookieHeaderQuery = URLParams<GetCookieHeaderParams, Result<RequestURL, RequestURL.Refusal>>
/// handleSetCookie's params, the same way.
typealias SetCookieQuery = URLParams<HandleSetCookieParams, Result<RequestURL, RequestURL.Refusal>>

extension MethodTable {
    /// Runs one request: one exhaustive switch from the method to its typed implementation.
    /// `params` (possibly over the request's bytes) is parsed here, before anything can outlive them.
    func dispatch(_ method: Method, _ params: Params, context: CallContext, to responder: Responder) {
        do throws(RPCError) {
            switch method {
            case .resolve: try resolve(ResolveParams(params), context: context, reply: Reply(responder: responder))
            case .reverse: try reverse(ReverseParams(params), context: context, reply: Reply(responder: responder))
            case .getCookieHeader:
                try getCookieHeader(
                    CookieHeaderQuery(params) { RequestURL.parse(utf8: $0, toASCII: IDNA.urlDomainToASCII) },
                    context: context,
                    reply: Reply(responder: responder))
            case .handleSetCookie:
                let query = try SetCookieQuery(params) { RequestURL.parse(utf8: $0, toASCII: IDNA.urlDomainToASCII) }
                let reply = Reply<SetCookieResult>(responder: responder)
                reply.charge(WorkCost.cookiesStored(query.members.setCookie.count))
                try handleSetCookie(query, context: context, reply: reply)
            case .deleteCookies:
                try deleteCookies(DeleteCookiesParams(params), context: context, reply: Reply(responder: responder))
            case .listCookies:
                try listCookies(ListCookiesParams(params), context: context, reply: Reply(responder: responder))
            case .importCookies:
                try importCookies(ImportCookiesParams(params), context: context, reply: Reply(responder: responder))
            case .exportCookies:
                try exportCookies(ExportCookiesParams(params), context: context, reply: Reply(responder: responder))
            case .forget: try forget(ForgetParams(params), context: context, reply: Reply(responder: responder))
            case .flushCache:
                try flushCache(FlushCacheParams(params), context: context, reply: Reply(responder: responder))
            case .status: try status(StatusParams(params), context: context, reply: Reply(responder: responder))
            case .showCache:
                try showCache(ShowCacheParams(params), context: context, reply: Reply(responder: responder))
            case .statistics:
                try statistics(StatisticsParams(params), context: context, reply: Reply(responder: responder))
            case .resetStatistics:
                try resetStatistics(ResetStatisticsParams(params), context: context, reply: Reply(responder: responder))
            case .metrics: try metrics(MetricsParams(params), context: context, reply: Reply(responder: responder))
            case .monitor: try monitor(MonitorParams(params), context: context, reply: Reply(responder: responder))
            case .discover: try discover(DiscoverParams(params), context: context, reply: Reply(responder: responder))
            }
        } catch {
            responder.fail(error)
        }
    }
}

/// Where one request's response goes: the connection's output, a slot of a batch, or nowhere
/// (a notification, which still counts as in flight until its method replies).
struct Responder {
    let connection: Connection
    /// nil for a notification.
    let id: RPCID?
    let batch: BatchResponse?
    let slot: Int
    /// nil for a method the daemon does not have.
    var method: Method? = nil

    func reply<Result: MethodResult>(_ outcome: consuming Swift.Result<Result, RPCError>) {
        // Switched on outside the encoding closure: inside it, the result was copied out of the
        // captured outcome (a retain of each of its strings and arrays, and their releases).
        switch consume outcome {
        case .success(let result):
            if let method { connection.server.requestCounts.succeeded(method) }
            connection.complete(self) { RPCEncoder.writeResult(result, id: id ?? .null, to: &$0) }
        case .failure(let error): fail(error)
        }
    }

    func fail(_ error: RPCError) {
        connection.server.requestCounts.failed(method, code: error.code.rawValue)
        connection.complete(self) { RPCEncoder.writeError(error, id: id ?? .null, to: &$0) }
    }

    func stream(_ result: some ResultStream) {
        if let method { connection.server.requestCounts.succeeded(method) }
        connection.complete(self, streaming: result)
    }

    func open(_ source: some AnswerSource) {
        if let method { connection.server.requestCounts.succeeded(method) }
        connection.complete(self, opening: source)
    }
}

/// Collects the responses of one batch and hands them over as one array line once all are in.
/// A batch of notifications only produces no line at all (JSON-RPC 2.0 §6).
final class BatchResponse {
    /// One element's response: bytes, or a response whose result streams.
    enum Part {
        case bytes([UInt8])
        case source(any AnswerSource)
    }

    private var slots: [Part?]
    private var remaining: Int
    /// Bytes of the responses held so far: they count as the connection's output.
    private(set) var byteCount = 0
    /// Memory the streamed responses held so far keep.
    private(set) var heldBytes = 0

    init(count: Int) {
        slots = Array(repeating: nil, count: count)
        remaining = count
    }

    /// Stores one element's response (nil: none, a notification); returns the whole line, in
    /// order, once the last one is in (nil while some are missing, or when none has a response).
    func fill(_ index: Int, _ response: Part?) -> [PendingAnswers.Item]? {
        slots[index] = response
        switch response {
        case .bytes(let bytes)?: byteCount += bytes.count
        case .source(let source)?: heldBytes += source.heldBytes
        case nil: break
        }
        remaining -= 1
        guard remaining == 0 else { return nil }
        let present = slots.compactMap { $0 }
        slots = []
        guard !present.isEmpty else { return nil }
        var items: [PendingAnswers.Item] = []
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(byteCount + present.count + 2)
        for (i, part) in present.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            switch part {
            case .bytes(let response):
                bytes.append(contentsOf: response)
            case .source(let source):
                items.append(.bytes(bytes))
                items.append(.source(source))
                bytes = []
            }
        }
        bytes.append(UInt8(ascii: "]"))
        bytes.append(0x0A)
        items.append(.bytes(bytes))
        return items
    }
}
