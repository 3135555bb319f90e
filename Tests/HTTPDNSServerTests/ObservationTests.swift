import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The counters behind `statistics` and `metrics`, and the `monitor` subscriptions' queues, in
/// process on a manual clock.
struct ObservationTests {
    /// What a subscription writes, split into its JSON lines.
    static func drain(_ subscription: MonitorSubscription, budget: Int = 1 << 20) -> (lines: [JSON], AnswerProgress) {
        var out = JSONOutput()
        let progress = subscription.writeNext(to: &out, budget: budget)
        let lines = String(decoding: out.bytes, as: UTF8.self).split(separator: "\n").map {
            (try? JSONParser.parse(String($0))) ?? .null
        }
        return (lines, progress)
    }

    static func event(_ n: Int) -> [UInt8] {
        Array(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"n":\#(n)}}"#.utf8) + [0x0A]
    }

    @Test func aSubscriptionWritesItsAnswerThenItsEventsAndWaits() {
        let clock = ManualClock()
        let hub = MonitorHub()
        let subscription = MonitorSubscription(
            uid: 1000, seesAll: false, answer: Array(#"{"jsonrpc":"2.0","id":1,"result":{}}"#.utf8) + [0x0A],
            clock: clock, hub: hub)
        hub.add(subscription)
        var woken = 0
        subscription.attach { woken += 1 }
        let (opening, first) = Self.drain(subscription)
        #expect(opening.map { $0["id"] } == [1])
        #expect(first == .waiting)
        hub.publish(uid: 1000) { JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"n":1"#, to: &$0) }
        hub.publish(uid: 1001) { JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"n":2"#, to: &$0) }
        #expect(woken == 1, "woken once, when its queue stopped being empty")
        #expect(hub.isWatching(uid: 1000) && !hub.isWatching(uid: 1001))
        let (events, second) = Self.drain(subscription)
        #expect(events.map { $0["params"]?["n"] } == [1], "another uid's event is not its to see")
        #expect(second == .waiting)
    }

    /// Past the queue's bound events are dropped and counted, and a `dropped` event with the
    /// count comes where they would have been; nothing is lost from the count.
    @Test func aSlowReaderGetsTheDropCountInPlaceOfTheDroppedEvents() {
        let clock = ManualClock()
        let hub = MonitorHub()
        let subscription = MonitorSubscription(uid: 0, seesAll: true, answer: [], clock: clock, hub: hub)
        let total = MonitorSubscription.queueLimit + 100
        for n in 0..<total { subscription.offer(Self.event(n)) }
        #expect(subscription.queuedCount == MonitorSubscription.queueLimit)
        #expect(subscription.totalDropped == 100)
        let held = subscription.heldBytes
        #expect(held >= MonitorSubscription.queueLimit * Self.event(0).count)
        subscription.offer(Self.event(total))
        var lines: [JSON] = []
        var progress = AnswerProgress.more
        while progress == .more {
            let (more, next) = Self.drain(subscription, budget: 4096)
            lines += more
            progress = next
        }
        #expect(progress == .waiting)
        let numbers = lines.compactMap { $0["params"]?["n"]?.numberValue?.int64Value }
        #expect(numbers == Array(0..<Int64(MonitorSubscription.queueLimit)))
        let dropped = lines.filter { $0["params"]?["type"] == "dropped" }
        #expect(dropped.map { $0["params"]?["count"] } == [101], "the later drop joins the first count")
        #expect(dropped.first?["params"]?["time"]?.numberValue?.int64Value == clock.wallMilliseconds())
        #expect(subscription.heldBytes < held / 8, "a drained queue holds nothing")
        subscription.offer(Self.event(7))
        #expect(Self.drain(subscription).lines.map { $0["params"]?["n"] } == [7])
    }

    @Test func theHubCountsDropsOfSubscriptionsThatAreGone() {
        let hub = MonitorHub()
        do {
            let subscription = MonitorSubscription(uid: 0, seesAll: true, answer: [], clock: ManualClock(), hub: hub)
            hub.add(subscription)
            for n in 0...MonitorSubscription.queueLimit + 2 { subscription.offer(Self.event(n)) }
            #expect(hub.count == 1 && hub.dropped == 3)
        }
        #expect(hub.count == 0)
        #expect(hub.dropped == 3)
        #expect(!hub.isWatching(uid: 0))
    }

    /// With a thousand uids watching, an event reaches its own uid's subscriptions and the
    /// all-seeing ones, nobody else's; each account's open subscriptions are counted for the
    /// cap, and one that goes frees its place.
    @Test func anEventReachesItsUIDsAndTheAllSeeingSubscriptionsOnly() {
        let clock = ManualClock()
        let hub = MonitorHub()
        var watchers = (0..<1000).map { n in
            MonitorSubscription(uid: 10_000 + UInt32(n), seesAll: false, answer: [], clock: clock, hub: hub)
        }
        let twice = MonitorSubscription(
            uid: 10_005, account: 10_005, seesAll: false, answer: [], clock: clock, hub: hub)
        var root: MonitorSubscription? = MonitorSubscription(uid: 0, seesAll: true, answer: [], clock: clock, hub: hub)
        for subscription in watchers + [twice, root!] { hub.add(subscription) }
        hub.add(root!)
        #expect(hub.count == 1002 && hub.count(account: 10_005) == 2 && hub.count(account: 0) == 1)
        var encoded = 0
        hub.publish(uid: 10_005) {
            encoded += 1
            JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"n":5"#, to: &$0)
        }
        hub.publish(uid: 42) { JSONWriter.raw(#"{"jsonrpc":"2.0","method":"monitorEvent","params":{"n":42"#, to: &$0) }
        #expect(encoded == 1, "encoded once for all its subscribers")
        #expect(Self.drain(watchers[5]).lines.map { $0["params"]?["n"] } == [5])
        #expect(Self.drain(twice).lines.map { $0["params"]?["n"] } == [5])
        #expect(Self.drain(root!).lines.map { $0["params"]?["n"] } == [5, 42], "added twice, offered once")
        #expect(watchers.enumerated().allSatisfy { $0.offset == 5 || $0.element.queuedCount == 0 })
        watchers.removeSubrange(0..<10)
        #expect(hub.count == 992 && hub.count(account: 10_005) == 1)
        #expect(hub.isWatching(uid: 10_003), "root sees every uid")
        root = nil
        #expect(hub.count == 991 && hub.count(account: 0) == 0)
        #expect(!hub.isWatching(uid: 10_003) && hub.isWatching(uid: 10_010))
    }

    /// `statistics` counts from the last reset, `metrics`' counters since start.
    @Test func statisticsCountFromTheLastResetAndCountersNeverGoBack() {
        let clock = ManualClock()
        let observation = Observation(clock: clock)
        let cache = DNSCache()
        observation.upstreamQueried("doh", failed: false, latencyMs: 7)
        observation.upstreamQueried("doh", failed: true, latencyMs: 2000)
        observation.upstreamQueried("doh", failed: nil, latencyMs: 10)
        observation.cookiesChanged(
            uid: 1000, [.delete(CookieKey(domain: "a.example", path: "/", name: "sid"))])
        observation.cookiesRejected(uid: 1000, host: "a.example", reasons: ["syntax", "prefix"])
        observation.cookieHeaderBuilt()
        let before = observation.statistics(cache: cache, upstreamNames: ["doh", "other"])
        #expect(before.since == clock.wallSeconds())
        #expect(
            before.upstreams == [
                .init(name: "doh", queries: 3, failures: 1), .init(name: "other", queries: 0, failures: 0),
            ])
        #expect(before.cookies == .init(stored: 0, rejected: 2, deleted: 1, headers: 1))
        let latency = observation.counters.upstreams["doh"]?.latency
        #expect(latency?[1] == 1 && latency?.reduce(0, +) == 1, "only answered queries are timed: 7 ms, in <= 10")

        clock.stepWall(milliseconds: 60_000)
        #expect(observation.resetStatistics(cache: cache) == clock.wallSeconds())
        observation.upstreamQueried("doh", failed: false, latencyMs: 30)
        let after = observation.statistics(cache: cache, upstreamNames: ["doh"])
        #expect(after.since == clock.wallSeconds())
        #expect(after.upstreams == [.init(name: "doh", queries: 1, failures: 0)])
        #expect(after.cookies == .init(stored: 0, rejected: 0, deleted: 0, headers: 0))
        #expect(observation.current(cache: cache).upstreams["doh"]?.queries == 4, "the totals go on")
    }

    @Test func metricsExpositionEscapesLabelsAndCountsBuckets() {
        var m = MetricsExposition()
        m.family("x_total", type: "counter", help: "An x.", samples: [([("a", #"q"u\o"#)], 3), ([("a", "n\nl")], 0.5)])
        m.histogram("y_seconds", help: "A y.", bounds: [0.01, 0.1], series: [([("u", "d")], [1, 0, 2], 0.25)])
        #expect(
            m.text == """
                # HELP x_total An x.
                # TYPE x_total counter
                x_total{a="q\\"u\\\\o"} 3
                x_total{a="n\\nl"} 0.5
                # HELP y_seconds A y.
                # TYPE y_seconds histogram
                y_seconds_bucket{u="d",le="0.01"} 1
                y_seconds_bucket{u="d",le="0.1"} 1
                y_seconds_bucket{u="d",le="+Inf"} 3
                y_seconds_sum{u="d"} 0.25
                y_seconds_count{u="d"} 3

                """)
    }

    /// A subscribed connection waits for events, not requests: `IdleTimeout=` does not close it.
    @Test func aSubscribedConnectionIsNotIdle() throws {
        let harness = try InProcessServer(limits: ConnectionBudgetTests.limits { $0.idleTimeoutMilliseconds = 1_000 })
        let subscription = FakeSubscription()
        harness.methods.subscription = subscription
        let subscribed = try harness.connect()
        let idle = try harness.connect()
        try subscribed.send(subscribed.request("rpc.discover", id: 1))
        #expect(subscribed.awaitLines(1))
        harness.advance(milliseconds: 1_200)
        #expect(idle.awaitEOF())
        subscribed.receive()
        #expect(!subscribed.reachedEOF)
        subscription.publish(#"{"event":"late"}"#)
        #expect(subscribed.awaitLines(2))
        #expect(subscribed.lines.last == #"{"event":"late"}"#)
    }
}
