import HTTPDNSCore
import Testing

/// The marks a network change leaves on cached answers (`OnNetworkChange=refresh`).
struct CacheRefreshMarkTests {
    @Test func marksStayUntilTheAnswerIsReplaced() {
        let cache = DNSCache()
        let now = MonotonicInstant(nanoseconds: 1_000_000_000)
        cache.insert(
            host: "a.example", parts: [CachePart(family: .ipv4, addresses: ["192.0.2.1"], ttl: 60)], upstream: "x",
            now: now)
        cache.insert(
            host: "b.example",
            parts: [
                CachePart(family: .ipv4, addresses: ["192.0.2.2"], ttl: 60),
                CachePart(family: .ipv6, addresses: [], ttl: 60),
            ], upstream: "x", now: now)
        #expect(!cache.needsRefresh(host: "a.example", families: [.ipv4]))
        #expect(cache.markAllForRefresh() == 3)
        #expect(cache.markAllForRefresh() == 3, "marking twice counts each entry once")
        #expect(cache.needsRefresh(host: "b.example", families: [.ipv6]))
        // Still answered, fresh.
        #expect(
            cache.answer(host: "a.example", families: [.ipv4], now: now, allowStale: false)
                != .miss)
        cache.insert(
            host: "a.example", parts: [CachePart(family: .ipv4, addresses: ["192.0.2.9"], ttl: 60)], upstream: "x",
            now: now)
        #expect(!cache.needsRefresh(host: "a.example", families: [.ipv4]) && cache.refreshMarks == 2)
        cache.flush(host: "b.example")
        #expect(cache.refreshMarks == 0)
        cache.markForRefresh(host: "a.example")
        #expect(cache.refreshMarks == 1)
        cache.flush(host: nil)
        #expect(cache.refreshMarks == 0 && !cache.needsRefresh(host: "a.example", families: [.ipv4]))
    }
}
