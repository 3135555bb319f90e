import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSSystem

/// `RPCServer` and its connections on a loop the test drives turn by turn, with a manual clock,
/// fake methods, and clients on socketpairs: no daemon, no sleeps. Each turn waits in epoll for
/// the event it needs, so a test awaits replies instead of sleeping.
final class InProcessServer {
    let clock = ManualClock()
    let loop: EventLoop
    let server: RPCServer
    let methods = FakeMethods()
    let directory = TemporaryDirectory(prefix: "ips")
    let listener: FileDescriptor
    /// What the server's accept and credential seams do, as the test sets it.
    final class Seams {
        /// The uid each server-side descriptor is credited to (the socketpair's own otherwise).
        var uids: [Int32: UInt32] = [:]
        /// Errors the next accepts fail with, in order (EMFILE, ...).
        var acceptFailures: [Errno] = []
        /// A backlog refilled as fast as it is drained: every accept gets a new connection whose
        /// peer has already closed it (connect and close in a loop), credited to this uid, until
        /// 4096 were accepted (so that a loop that accepts until EAGAIN ends, and its test fails).
        var stormUID: UInt32?
        /// Accepts that returned a connection.
        var accepted = 0
    }

    /// The server's log lines.
    final class Log: Sendable {
        let lines = Mutex<[String]>([])
    }

    let seams = Seams()
    let log = Log()

    init(limits: ServerLimits = ServerLimits()) throws {
        loop = try EventLoop(clock: clock)
        listener = try UnixSocket.listen(path: directory.file("s.sock"))
        let log = self.log
        let seams = self.seams
        let logger = Logger(threshold: .debug) { _, line in log.lines.withLock { $0.append(line) } }
        server = RPCServer(
            loop: loop, listener: listener, limits: limits, logger: logger,
            accept: { fd throws(SystemError) in
                if !seams.acceptFailures.isEmpty {
                    throw SystemError(errno: seams.acceptFailures.removeFirst(), call: "accept4")
                }
                if let uid = seams.stormUID, seams.accepted < 4096 {
                    let (closed, served) = try socketPair()
                    closed.close()
                    try served.setNonBlocking()
                    seams.uids[served.rawValue] = uid
                    seams.accepted += 1
                    return .done(served)
                }
                let result = try UnixSocket.accept(fd)
                if case .done = result { seams.accepted += 1 }
                return result
            },
            peerCredentials: { fd throws(SystemError) in
                let real = try UnixSocket.peerCredentials(fd)
                return PeerCredentials(pid: real.pid, uid: seams.uids[fd.rawValue] ?? real.uid, gid: real.gid)
            })
        server.serve(methods.table)
        try server.startListening()
    }

    deinit {
        // Takes the listener out of the loop, which holds its handler (the server) strongly: else
        // loop and server keep each other alive after the test (LeakSanitizer reports the pair).
        server.beginShutdown()
        server.closeAll()
        listener.close()
    }

    /// A client on a socketpair, admitted as `uid`; `sendBuffer` shrinks the server side's
    /// kernel buffer (SO_SNDBUF), so that unread answers stay in the server.
    func connect(uid: UInt32? = nil, sendBuffer: Int32? = nil) throws -> Peer {
        let (ours, theirs) = try socketPair()
        try theirs.setNonBlocking()
        if var size = sendBuffer {
            setsockopt(theirs.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let uid { seams.uids[theirs.rawValue] = uid }
        server.admit(theirs)
        try ours.setNonBlocking()
        return Peer(fd: ours, server: self)
    }

    /// Runs turns until `condition` holds; false when it did not within `turns` turns (each
    /// waits at most 100 ms of real time for an event).
    @discardableResult
    func run(turns: Int = 200, until condition: () -> Bool) -> Bool {
        for _ in 0..<turns {
            if condition() { return true }
            loop.runTurn(maxWaitMilliseconds: 100)
        }
        return condition()
    }

    /// Moves the clock and runs the turn that fires what became due.
    func advance(milliseconds: Int64) {
        clock.advance(milliseconds: milliseconds)
        loop.runTurn(maxWaitMilliseconds: 0)
    }
}

/// The test's end of a connection.
final class Peer {
    let fd: FileDescriptor
    unowned let server: InProcessServer
    private var framer = LineFramer(maxLineLength: 64 << 20)
    private(set) var lines: [String] = []
    private(set) var reachedEOF = false
    private(set) var bytesRead = 0

    init(fd: FileDescriptor, server: InProcessServer) {
        self.fd = fd
        self.server = server
    }

    deinit { fd.close() }

    func send(_ text: String) throws { try fd.writeAll(Array(text.utf8)) }

    func send(_ request: JSON) throws { try send(request.encodedString + "\n") }

    /// Sends `text` whatever its size: what the socket does not take at once goes as the server
    /// reads, turn by turn (false if it did not all go).
    func push(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        return server.run(turns: 2_000) {
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes {
                    Glibc.send(fd.rawValue, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_DONTWAIT))
                }
                if n <= 0 { break }
                sent += n
            }
            return sent == bytes.count
        }
    }

    func request(_ method: String, id: JSON? = 1, _ params: JSON? = nil) -> JSON {
        var object: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
        if let id { object["id"] = id }
        if let params { object["params"] = params }
        return .object(object)
    }

    /// Reads what has arrived, without waiting.
    func receive() {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while !reachedEOF {
            let result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try fd.read(into: raw) }
            }
            switch result {
            case .success(.done(0)), .failure:
                reachedEOF = true
            case .success(.done(let n)):
                bytesRead += n
                framer.append(Array(buffer[0..<n]))
                framer.drain { event in
                    if case .line(let line) = event { lines.append(String(decoding: line, as: UTF8.self)) }
                }
            case .success(.wouldBlock):
                return
            }
        }
    }

    /// Answer lines the socket holds for this client now, left unread.
    func linesWaiting() -> Int {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let n = buffer.withUnsafeMutableBytes {
            Glibc.recv(fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT))
        }
        return n > 0 ? buffer[0..<n].filter { $0 == 0x0A }.count : 0
    }

    /// Turns until `count` lines in all arrived (false if they did not).
    func awaitLines(_ count: Int, turns: Int = 200) -> Bool {
        server.run(turns: turns) {
            receive()
            return lines.count >= count || reachedEOF
        } && lines.count >= count
    }

    /// Turns until the server closed this connection.
    func awaitEOF(turns: Int = 200) -> Bool {
        server.run(turns: turns) {
            receive()
            return reachedEOF
        }
    }

    /// The responses so far, parsed.
    var responses: [JSON] { lines.compactMap { try? JSONParser.parse($0) } }

    func response(id: JSON) -> JSON? { responses.first { $0["id"] == id } }

    func closeWrite() { UnixSocket.shutdownWrite(fd) }
}

/// Methods that answer at once, or (for resolves of names starting with "slow") when the test
/// releases them; every call is recorded. Every method is served, each answering a fixed value.
final class FakeMethods {
    private(set) var calls: [Method] = []
    private var held: [Reply<ResolveResult>] = []
    /// Cookies `listCookies` streams (its answer's size is the test's to choose).
    var listed: [Cookie] = []
    /// The text `exportCookies` answers with, all at once (not streamed).
    var exported = ""
    /// When set, `exportCookies` streams these as the daemon does instead.
    var exportedCookies: [Cookie]?
    /// Extra work units of each method (`MethodTable.workUnits`).
    var costs: [Method: Int] = [:]
    /// What `metrics` answers: a large text makes a large answer written whole.
    var metricsText = ""
    /// When set, `rpc.discover` opens it (a subscription) instead of answering.
    var subscription: (any AnswerSource)?

    /// Runs after a resolve answered, within its call (what a request does after its answer).
    var afterResolveAnswered: ((ResolveParams) -> Void)?

    var heldCount: Int { held.count }

    /// Answers every held resolve.
    func releaseHeld() {
        let replies = held
        held.removeAll()
        for reply in replies {
            reply(
                .success(
                    ResolveResult(host: "slow", ipv4: ["192.0.2.1"], ipv6: [], ttl: 1, stale: false, source: .upstream))
            )
        }
    }

    /// Every method, bound to record its call and answer.
    var table: MethodTable {
        var table = MethodTable()
        table.bind(.resolve, workUnits: units(.resolve)) {
            [unowned self] (params: ResolveParams, _, reply: Reply<ResolveResult>) throws(RPCError) in
            calls.append(.resolve)
            if params.host.hasPrefix("slow") { return held.append(reply) }
            reply(
                .success(
                    ResolveResult(
                        host: params.host, ipv4: ["192.0.2.1"], ipv6: [], ttl: 60, stale: false, source: .cache)
                ))
            afterResolveAnswered?(params)
        }
        table.bind(.reverse, workUnits: units(.reverse)) {
            [unowned self] (params: ReverseParams, _, reply: Reply<ReverseResult>) throws(RPCError) in
            calls.append(.reverse)
            reply(
                .success(
                    ReverseResult(
                        address: params.address, hosts: ["a.example"], ttl: 1,
                        names: [.init(host: "a.example", ttl: 1, rememberedFor: 86_401)])))
        }
        table.bind(
            .getCookieHeader, declared: GetCookieHeaderParams.self, reading: CookieHeaderQuery.read,
            workUnits: units(.getCookieHeader)
        ) { [unowned self] _, context, reply throws(RPCError) in
            calls.append(.getCookieHeader)
            reply(.success(CookieHeaderResult(header: "uid=\(context.peer.uid)", count: 1)))
        }
        table.bind(
            .handleSetCookie, declared: HandleSetCookieParams.self, reading: SetCookieQuery.read,
            paramsWorkUnits: SetCookieQuery.workUnits, workUnits: units(.handleSetCookie)
        ) { [unowned self] query, _, reply throws(RPCError) in
            calls.append(.handleSetCookie)
            reply(.success(SetCookieResult(host: "a.example", stored: query.members.setCookie.count, rejected: [])))
        }
        table.bind(.deleteCookies, workUnits: units(.deleteCookies)) {
            [unowned self] (_: DeleteCookiesParams, _, reply: Reply<DeleteCookiesResult>) throws(RPCError) in
            calls.append(.deleteCookies)
            reply(.success(DeleteCookiesResult(deleted: 0)))
        }
        table.bind(.listCookies, workUnits: units(.listCookies)) {
            [unowned self] (_: ListCookiesParams, _, reply: Reply<ListCookiesResult>) throws(RPCError) in
            calls.append(.listCookies)
            reply.stream(ArrayResultStream(cookies: listed))
        }
        table.bind(.importCookies, workUnits: units(.importCookies)) {
            [unowned self] (_: ImportCookiesParams, _, reply: Reply<ImportCookiesResult>) throws(RPCError) in
            calls.append(.importCookies)
            reply(.success(ImportCookiesResult(imported: 0)))
        }
        table.bind(.exportCookies, workUnits: units(.exportCookies)) {
            [unowned self] (_: ExportCookiesParams, _, reply: Reply<ExportCookiesResult>) throws(RPCError) in
            calls.append(.exportCookies)
            if let exportedCookies { return reply.stream(NetscapeExportStream(exportedCookies)) }
            reply(.success(ExportCookiesResult(data: exported)))
        }
        table.bind(.forget, workUnits: units(.forget)) {
            [unowned self] (_: ForgetParams, _, reply: Reply<ForgetResult>) throws(RPCError) in
            calls.append(.forget)
            reply(.success(ForgetResult(forgotten: 0)))
        }
        table.bind(.flushCache, workUnits: units(.flushCache)) {
            [unowned self] (_: FlushCacheParams, _, reply: Reply<FlushCacheResult>) throws(RPCError) in
            calls.append(.flushCache)
            reply(.success(FlushCacheResult(flushed: 0)))
        }
        table.bind(.status, workUnits: units(.status)) {
            [unowned self] (_: StatusParams, _, reply: Reply<StatusResult>) throws(RPCError) in
            calls.append(.status)
            reply(
                .success(
                    StatusResult(
                        version: "test", uptime: 0, cache: .init(entries: 0, hits: 0, misses: 0, staleServed: 0),
                        cookieCount: 0, upstreams: [])))
        }
        table.bind(.showCache, workUnits: units(.showCache)) {
            [unowned self] (_: ShowCacheParams, _, reply: Reply<ShowCacheResult>) throws(RPCError) in
            calls.append(.showCache)
            reply(.success(ShowCacheResult(entries: [])))
        }
        table.bind(.statistics, workUnits: units(.statistics)) {
            [unowned self] (_: StatisticsParams, _, reply: Reply<StatisticsResult>) throws(RPCError) in
            calls.append(.statistics)
            reply(
                .success(
                    StatisticsResult(
                        since: 0, cache: .init(entries: 0, hits: 0, misses: 0, staleServed: 0), upstreams: [],
                        cookies: .init(stored: 0, rejected: 0, deleted: 0, headers: 0))))
        }
        table.bind(.resetStatistics, workUnits: units(.resetStatistics)) {
            [unowned self] (_: ResetStatisticsParams, _, reply: Reply<ResetStatisticsResult>) throws(RPCError) in
            calls.append(.resetStatistics)
            reply(.success(ResetStatisticsResult(since: 0)))
        }
        table.bind(.metrics, workUnits: units(.metrics)) {
            [unowned self] (_: MetricsParams, _, reply: Reply<MetricsResult>) throws(RPCError) in
            calls.append(.metrics)
            reply(.success(MetricsResult(text: metricsText)))
        }
        table.bind(.monitor, workUnits: units(.monitor)) {
            [unowned self] (_: MonitorParams, _, reply: Reply<MonitorResult>) throws(RPCError) in
            calls.append(.monitor)
            reply(.success(MonitorResult(scope: "own", queueLimit: 1)))
        }
        table.bind(.discover, workUnits: units(.discover)) {
            [unowned self] (_: DiscoverParams, _, reply: Reply<DiscoverResult>) throws(RPCError) in
            calls.append(.discover)
            if let subscription { return reply.open(subscription) }
            reply(.success(DiscoverResult(encodedDocument: Array(#"{"openrpc":"1.2.6","info":{},"methods":[]}"#.utf8))))
        }
        return table
    }

    /// The test's extra cost for `method`, read when a request runs.
    private func units(_ method: Method) -> (CallContext) -> Int {
        { [unowned self] _ in costs[method] ?? 0 }
    }

    /// A cookie of about `bytes` bytes on the wire.
    static func cookie(bytes: Int, index: Int) -> Cookie {
        Cookie(
            name: "c\(index)", value: String(repeating: "v", count: bytes), domain: "a.example", hostOnly: true,
            path: "/",
            expires: nil, secure: false, httpOnly: false, sameSite: .lax, partitioned: false, created: 0)
    }
}
