import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// What the daemon counts and who watches it: the counters behind `statistics` and `metrics`,
/// and the `monitor` subscriptions. The resolver and the cookie service report to it; it lives
/// on the loop thread.
final class Observation {
    /// Counts that only grow (Prometheus counters); `statistics` shows them less `baseline`.
    struct Counters: Equatable {
        struct Upstream: Equatable {
            var queries = 0
            var failures = 0
            /// Answered queries by latency bucket (`Observation.latencyBuckets`, then +Inf).
            var latency = [Int](repeating: 0, count: Observation.latencyBuckets.count + 1)
            var latencySumMs = 0
        }
        var upstreams: [String: Upstream] = [:]
        var cookiesStored = 0
        var cookiesRejected = 0
        var cookiesDeleted = 0
        var cookieHeaders = 0
        var cacheHits = 0
        var cacheMisses = 0
        var cacheStaleServed = 0
        var monitorDropped = 0
    }

    /// Upper bounds, in milliseconds, of the upstream latency histogram's buckets.
    static let latencyBuckets = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000]

    private let clock: any DaemonClock
    private(set) var counters = Counters()
    /// `counters` at the last `resetStatistics` (zero before).
    private var baseline = Counters()
    /// Unix seconds `statistics` counts from.
    private(set) var since: Int64
    let monitors = MonitorHub()

    init(clock: any DaemonClock) {
        self.clock = clock
        since = clock.wallSeconds()
    }

    // MARK: reports

    /// One query to an upstream: `failed` nil when it was cut short (no verdict).
    func upstreamQueried(_ name: String, failed: Bool?, latencyMs: Int) {
        var upstream = counters.upstreams[name] ?? Counters.Upstream()
        upstream.queries += 1
        if failed == true { upstream.failures += 1 }
        if failed == false {
            let bucket = Self.latencyBuckets.firstIndex { latencyMs <= $0 } ?? Self.latencyBuckets.count
            upstream.latency[bucket] += 1
            upstream.latencySumMs += latencyMs
        }
        counters.upstreams[name] = upstream
    }

    /// A resolve's outcome for `uid`: an event for the monitors that see it.
    func resolved(uid: UInt32, host: String, family: AddressFamily, _ outcome: Result<ResolveResult, RPCError>) {
        guard monitors.isWatching(uid: uid) else { return }
        let time = clock.wallMilliseconds()
        monitors.publish(uid: uid) { out in
            Self.eventHead("resolve", time: time, uid: uid, to: &out)
            JSONWriter.raw(#","host":"#, to: &out)
            JSONWriter.string(host, to: &out)
            JSONWriter.raw(#","family":"#, to: &out)
            JSONWriter.string(family.rawValue, to: &out)
            switch outcome {
            case .success(let result):
                JSONWriter.raw(#","ipv4":"#, to: &out)
                JSONWriter.stringArray(result.ipv4, to: &out)
                JSONWriter.raw(#","ipv6":"#, to: &out)
                JSONWriter.stringArray(result.ipv6, to: &out)
                JSONWriter.raw(#","ttl":"#, to: &out)
                JSONWriter.integer(result.ttl, to: &out)
                JSONWriter.raw(#","stale":"#, to: &out)
                JSONWriter.bool(result.stale, to: &out)
                JSONWriter.raw(#","source":"#, to: &out)
                JSONWriter.string(result.source.rawValue, to: &out)
                JSONWriter.raw(#","upstream":"#, to: &out)
                JSONWriter.string(result.upstream, to: &out)
            case .failure(let error):
                JSONWriter.raw(#","error":{"code":"#, to: &out)
                JSONWriter.integer(Int(error.code.rawValue), to: &out)
                JSONWriter.raw(#","name":"#, to: &out)
                JSONWriter.string(error.name, to: &out)
                out.append(UInt8(ascii: "}"))
            }
        }
    }

    /// Committed changes of `uid`'s jar: counted, and an event per cookie (name, domain and
    /// path; never a value).
    func cookiesChanged(uid: UInt32, _ changes: [CookieChange]) {
        for change in changes {
            switch change {
            case .upsert: counters.cookiesStored += 1
            case .delete: counters.cookiesDeleted += 1
            }
        }
        guard monitors.isWatching(uid: uid) else { return }
        let time = clock.wallMilliseconds()
        for change in changes {
            let (action, key): (StaticString, CookieKey) =
                switch change {
                case .upsert(let cookie): ("stored", cookie.key)
                case .delete(let key): ("deleted", key)
                }
            monitors.publish(uid: uid) { out in
                Self.eventHead("cookie", time: time, uid: uid, to: &out)
                JSONWriter.raw(#","action":""#, to: &out)
                JSONWriter.raw(action, to: &out)
                JSONWriter.raw(#"","name":"#, to: &out)
                JSONWriter.string(key.name, to: &out)
                JSONWriter.raw(#","domain":"#, to: &out)
                JSONWriter.string(key.domain, to: &out)
                JSONWriter.raw(#","path":"#, to: &out)
                JSONWriter.string(key.path, to: &out)
            }
        }
    }

    /// Set-Cookie values of `uid` refused for `host`, each with its reason.
    func cookiesRejected(uid: UInt32, host: String, reasons: [String]) {
        counters.cookiesRejected += reasons.count
        guard monitors.isWatching(uid: uid) else { return }
        let time = clock.wallMilliseconds()
        for reason in reasons {
            monitors.publish(uid: uid) { out in
                Self.eventHead("cookie", time: time, uid: uid, to: &out)
                JSONWriter.raw(#","action":"rejected","domain":"#, to: &out)
                JSONWriter.string(host, to: &out)
                JSONWriter.raw(#","reason":"#, to: &out)
                JSONWriter.string(reason, to: &out)
            }
        }
    }

    func cookieHeaderBuilt() { counters.cookieHeaders += 1 }

    // MARK: statistics

    /// The counters since `since`; the cache's come from the cache, which counts on its own.
    func statistics(cache: DNSCache, upstreamNames: [String]) -> StatisticsResult {
        let now = current(cache: cache)
        return StatisticsResult(
            since: since,
            cache: .init(
                entries: cache.entryCount, hits: now.cacheHits - baseline.cacheHits,
                misses: now.cacheMisses - baseline.cacheMisses,
                staleServed: now.cacheStaleServed - baseline.cacheStaleServed),
            upstreams: upstreamNames.map { name in
                let total = now.upstreams[name] ?? Counters.Upstream()
                let before = baseline.upstreams[name] ?? Counters.Upstream()
                return StatisticsResult.Upstream(
                    name: name, queries: total.queries - before.queries, failures: total.failures - before.failures)
            },
            cookies: .init(
                stored: now.cookiesStored - baseline.cookiesStored,
                rejected: now.cookiesRejected - baseline.cookiesRejected,
                deleted: now.cookiesDeleted - baseline.cookiesDeleted,
                headers: now.cookieHeaders - baseline.cookieHeaders))
    }

    /// `statistics` counts from now on; `metrics` (Prometheus counters) never go back.
    func resetStatistics(cache: DNSCache) -> Int64 {
        baseline = current(cache: cache)
        since = clock.wallSeconds()
        return since
    }

    /// The counters with the cache's and the monitors' filled in.
    func current(cache: DNSCache) -> Counters {
        var now = counters
        now.cacheHits = cache.hits
        now.cacheMisses = cache.misses
        now.cacheStaleServed = cache.staleServed
        now.monitorDropped = monitors.dropped
        return now
    }

    /// `{"jsonrpc":"2.0","method":"monitorEvent","params":{"time":…,"type":"…","uid":…` (the
    /// caller closes it with `}}`).
    private static func eventHead(_ type: StaticString, time: Int64, uid: UInt32, to out: inout JSONOutput) {
        JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"time":"#, to: &out)
        JSONWriter.integer(time, to: &out)
        JSONWriter.raw(#","type":""#, to: &out)
        JSONWriter.raw(type, to: &out)
        JSONWriter.raw(#"","uid":"#, to: &out)
        JSONWriter.integer(Int64(uid), to: &out)
    }
}

@available(*, unavailable)
extension Observation: Sendable {}

/// The `monitor` subscriptions: each event goes to the subscribers that may see it, as one
/// encoded line each queues. They are kept by the uid they watch (and apart, those that see
/// every uid), so an event costs its own uid's subscriptions and the all-seeing ones, however
/// many other uids watch.
final class MonitorHub {
    private struct Weak {
        weak var subscription: MonitorSubscription?
    }
    /// Subscriptions that see one uid's events, by that uid.
    private var watchingUID: [UInt32: [Weak]] = [:]
    /// Subscriptions that see every uid's (root's, the daemon user's).
    private var watchingAll: [Weak] = []
    /// Open subscriptions per account, for `maxPerUser` without a count of them all.
    private var openByAccount: [UInt32: Int] = [:]
    /// Events dropped by subscriptions that are gone (theirs count until then).
    private var droppedByGone = 0

    /// Subscriptions one uid may hold: each event is offered to every subscription that sees
    /// it, on the loop, so a uid with a thousand of them made each of its own writes cost a
    /// thousand copies.
    static let maxPerUser = 16

    /// Subscriptions still open.
    var count: Int { openByAccount.values.reduce(0, +) }

    /// Subscriptions the uids of `account` hold open.
    func count(account: UInt32) -> Int { openByAccount[account] ?? 0 }

    /// Events dropped for slow readers since start.
    var dropped: Int {
        var total = droppedByGone
        for list in watchingUID.values { total += list.reduce(0) { $0 + ($1.subscription?.totalDropped ?? 0) } }
        return total + watchingAll.reduce(0) { $0 + ($1.subscription?.totalDropped ?? 0) }
    }

    /// Adds `subscription` once (again: nothing).
    func add(_ subscription: MonitorSubscription) {
        guard !subscription.counted else { return }
        subscription.counted = true
        openByAccount[subscription.account, default: 0] += 1
        if subscription.seesAll {
            watchingAll.append(Weak(subscription: subscription))
        } else {
            watchingUID[subscription.uid, default: []].append(Weak(subscription: subscription))
        }
    }

    /// Whether any subscription sees `uid`'s events (cheap when nobody watches): a gone one is
    /// taken out as it goes, so the lists hold open ones only.
    func isWatching(uid: UInt32) -> Bool { !watchingAll.isEmpty || watchingUID[uid] != nil }

    /// Encodes the event (its line, without the newline) once and offers it to every
    /// subscription that sees `uid`.
    func publish(uid: UInt32, encode: (inout JSONOutput) -> Void) {
        var line: [UInt8]?
        func offer(to list: [Weak]) {
            for entry in list {
                guard let subscription = entry.subscription else { continue }
                if line == nil {
                    var out = JSONOutput()
                    encode(&out)
                    JSONWriter.raw("}}\n", to: &out)
                    line = out.bytes
                }
                subscription.offer(line!)
            }
        }
        if let own = watchingUID[uid] { offer(to: own) }
        offer(to: watchingAll)
    }

    /// Called by a subscription as it goes (its weak entry already empty): its drops stay
    /// counted, its entry leaves its list and its place is free.
    fileprivate func gone(_ subscription: MonitorSubscription) {
        droppedByGone += subscription.totalDropped
        guard subscription.counted else { return }
        if subscription.seesAll {
            watchingAll.removeAll { $0.subscription == nil }
        } else {
            watchingUID[subscription.uid]?.removeAll { $0.subscription == nil }
            if watchingUID[subscription.uid]?.isEmpty == true { watchingUID[subscription.uid] = nil }
        }
        openByAccount[subscription.account, default: 1] -= 1
        if openByAccount[subscription.account] ?? 0 <= 0 { openByAccount[subscription.account] = nil }
    }
}

@available(*, unavailable)
extension MonitorHub: Sendable {}

/// One `monitor` call's stream: the answer, then its events as the client reads them. Events
/// wait in a bounded queue (charged to the subscriber's uid as held memory, and written on
/// its work credit); past the bound newer ones are dropped and counted, and a `dropped` event
/// with the count takes their place in the stream.
final class MonitorSubscription: AnswerSource {
    /// Events one subscription may have waiting.
    static let queueLimit = 1024
    /// Bytes of events one subscription may have waiting.
    static let queuedBytesLimit = 256 << 10

    private enum Item {
        case line([UInt8])
        /// Events left out here.
        case dropped(Int)
    }

    let uid: UInt32
    /// Whose bound of subscriptions it counts against (`CallContext.account`).
    let account: UInt32
    /// Root (or the daemon's user) sees every uid's events; others their own.
    let seesAll: Bool
    private var opening: [UInt8]?
    private var queue: [Item] = []
    private var head = 0
    /// Events (lines) queued and their bytes.
    private(set) var queuedCount = 0
    private var queuedBytes = 0
    private(set) var totalDropped = 0
    private var wake: (() -> Void)?
    private let clock: any DaemonClock
    private weak var hub: MonitorHub?

    /// `answer`: the response line to the `monitor` call, written first.
    init(uid: UInt32, account: UInt32? = nil, seesAll: Bool, answer: [UInt8], clock: any DaemonClock, hub: MonitorHub) {
        self.uid = uid
        self.account = account ?? uid
        self.seesAll = seesAll
        opening = answer
        self.clock = clock
        self.hub = hub
    }

    /// Whether the hub counts it as open (`MonitorHub.add`).
    fileprivate var counted = false

    deinit { hub?.gone(self) }

    /// Queues one event line, or counts it as dropped when the queue is full.
    func offer(_ line: [UInt8]) {
        let wasEmpty = head == queue.count
        if queuedCount < Self.queueLimit && queuedBytes + line.count <= Self.queuedBytesLimit {
            queue.append(.line(line))
            queuedCount += 1
            queuedBytes += line.count
        } else {
            totalDropped += 1
            if case .dropped(let count)? = queue.last, head < queue.count {
                queue[queue.count - 1] = .dropped(count + 1)
            } else {
                queue.append(.dropped(1))
            }
        }
        if wasEmpty { wake?() }
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> AnswerProgress {
        let start = out.count
        if let opening {
            out.append(contentsOf: opening)
            self.opening = nil
        }
        while head < queue.count && out.count - start < budget {
            switch queue[head] {
            case .line(let line):
                out.append(contentsOf: line)
                queuedCount -= 1
                queuedBytes -= line.count
            case .dropped(let count):
                JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"time":"#, to: &out)
                JSONWriter.integer(clock.wallMilliseconds(), to: &out)
                JSONWriter.raw(#","type":"dropped","count":"#, to: &out)
                JSONWriter.integer(count, to: &out)
                JSONWriter.raw("}}\n", to: &out)
            }
            queue[head] = .dropped(0)
            head += 1
        }
        guard head == queue.count else { return .more }
        queue.removeAll(keepingCapacity: queue.capacity <= 64)
        head = 0
        return .waiting
    }

    var heldBytes: Int { queuedBytes + (opening?.count ?? 0) + queue.capacity * MemoryLayout<Item>.stride }

    func attach(wake: @escaping () -> Void) { self.wake = wake }
}

@available(*, unavailable)
extension MonitorSubscription: Sendable {}
