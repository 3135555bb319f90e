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

/// Who may call a method.
enum MethodAccess {
    case anyone
    /// Only root and the daemon's own user; `what` finishes "only root or the daemon's user may ...".
    case privileged(_ what: String)
}

/// The methods one server runs, each bound once: its handler, what running it costs beyond its line
/// and who may call it (as systemd binds varlink methods). The daemon's `Services` binds every
/// method; an in-process test binds those it serves, and the rest are "Method not found".
///
/// A handler either throws before replying or replies (once), never both. Params are read before
/// the call, so handlers never see a `Params`.
struct MethodTable {
    private struct Binding {
        let run: (Params, CallContext, Responder) throws(RPCError) -> Void
        let workUnits: (CallContext) -> Int
        let access: MethodAccess
    }

    private var bindings: [Binding?] = Array(repeating: nil, count: Method.allCases.count)

    /// Binds `method` to `handler`, its params read by their type.
    mutating func bind<P: MethodParams, R: MethodResult>(
        _ method: Method, access: MethodAccess = .anyone, workUnits: @escaping (CallContext) -> Int = { _ in 0 },
        _ handler: @escaping (P, CallContext, Reply<R>) throws(RPCError) -> Void
    ) {
        bind(
            method, declared: P.self, reading: { params throws(RPCError) in try P(params) }, access: access,
            workUnits: workUnits, handler)
    }

    /// Binds `method` to `handler`, its params (of the declared type `declared`) read by `read`: a
    /// reader that parses a member from the request's bytes before anything can outlive them.
    /// `paramsWorkUnits` charges what the params read say the run costs (before it runs).
    mutating func bind<P: MethodParams, Query, R: MethodResult>(
        _ method: Method, declared: P.Type, reading read: @escaping (Params) throws(RPCError) -> Query,
        paramsWorkUnits: @escaping (borrowing Query) -> Int = { _ in 0 }, access: MethodAccess = .anyone,
        workUnits: @escaping (CallContext) -> Int = { _ in 0 },
        _ handler: @escaping (consuming Query, CallContext, Reply<R>) throws(RPCError) -> Void
    ) {
        precondition(
            ObjectIdentifier(P.self) == ObjectIdentifier(method.paramsType)
                && ObjectIdentifier(R.self) == ObjectIdentifier(method.resultType),
            "\(method.rawValue) bound to types other than its declaration's")
        bindings[method.ordinal] = Binding(
            run: { params, context, responder throws(RPCError) in
                let query = try read(params)
                let reply = Reply<R>(responder: responder)
                reply.charge(paramsWorkUnits(query))
                try handler(query, context, reply)
            }, workUnits: workUnits, access: access)
    }

    /// Whether `method` is bound here.
    func serves(_ method: Method) -> Bool { bindings[method.ordinal] != nil }

    /// Runs one request. `params` (possibly over the request's bytes) is read here, before anything
    /// can outlive them.
    func dispatch(_ method: Method, _ params: Params, context: CallContext, to responder: Responder) {
        guard let binding = bindings[method.ordinal] else {
            return responder.fail(.methodNotFound(method.rawValue))
        }
        do throws(RPCError) {
            if case .privileged(let what) = binding.access, !ResolverService.isPrivileged(context.peer.uid) {
                throw .permissionDenied("only root or the daemon's user may \(what)")
            }
            try binding.run(params, context, responder)
        } catch {
            responder.fail(error)
        }
    }

    /// What running `method` for `context`'s uid costs beyond reading its line, in work units
    /// (`WorkCost`): the methods that walk a whole jar or the cache cost with its size.
    func workUnits(of method: Method, context: CallContext) -> Int {
        bindings[method.ordinal]?.workUnits(context) ?? 0
    }
}

/// getCookieHeader's params with the URL parsed from the request's bytes (a refusal: not a URL the
/// jar serves, or an ambiguous one, refused by the method after every member was read).
typealias CookieHeaderQuery = URLParams<GetCookieHeaderParams, Result<RequestURL, RequestURL.Refusal>>
/// handleSetCookie's params, the same way.
typealias SetCookieQuery = URLParams<HandleSetCookieParams, Result<RequestURL, RequestURL.Refusal>>

extension URLParams where Members == HandleSetCookieParams {
    /// A store costs with its cookies.
    static func workUnits(_ query: borrowing Self) -> Int { WorkCost.cookiesStored(query.members.setCookie.count) }
}

extension URLParams where URLValue == Result<RequestURL, RequestURL.Refusal> {
    /// Reads the params, the URL with the jar's parser.
    static func read(_ params: Params) throws(RPCError) -> Self {
        try Self(params) { RequestURL.parse(utf8: $0, toASCII: IDNA.urlDomainToASCII) }
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
