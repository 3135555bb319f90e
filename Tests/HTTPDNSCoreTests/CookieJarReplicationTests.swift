import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The jar's side of fleet replication: which of its changes are deliberate, and remote changes
/// that never become local ones.
struct CookieJarReplicationTests {
    typealias H = JarHarness

    @Test func expiryPurgesAreMarkedAndOtherChangesAreNot() throws {
        let harness = H()
        try harness.set("old=1; Max-Age=10", "keep=1; Max-Age=3600", url: "https://a.example/")
        try harness.set("gone=1; Max-Age=3600", url: "https://a.example/")
        _ = harness.jar.drainChanges()
        // Later: listing purges the expired cookie; a response deletes another with a past date.
        _ = try harness.jar.list(now: H.now + 60)
        try harness.set("gone=; Max-Age=0", url: "https://a.example/", at: H.now + 60)
        let drained = harness.jar.takeChanges()
        #expect(drained.changes.map(\.key.name) == ["old", "gone"])
        #expect(drained.expiryPurges == [0])
        #expect(drained.deliberate == [.delete(CookieKey(domain: "a.example", path: "/", name: "gone"))])
        #expect(harness.jar.takeChanges() == CookieJarChanges(changes: []))
    }

    @Test func remoteChangesUpdateMemoryWithoutBecomingLocalChanges() throws {
        let harness = H()
        try harness.set("local=1", url: "https://a.example/")
        let remote = Cookie(
            name: "sid", value: "from-b", domain: "a.example", hostOnly: true, path: "/", expires: H.now + 600,
            secure: true, httpOnly: true, sameSite: .lax, partitioned: false, created: H.now - 500, creationIndex: 0,
            lastAccess: H.now)
        #expect(harness.jar.applyRemote(remote, now: H.now) == [.upsert(harness.jar.cookie(for: remote.key)!)])
        #expect(try harness.header("https://a.example/") == "local=1; sid=from-b")
        // A replacement keeps the creation time the other machine gave it.
        var newer = remote
        newer.value = "newer"
        newer.created = H.now - 400
        _ = harness.jar.applyRemote(newer, now: H.now)
        #expect(harness.jar.cookie(for: remote.key)?.created == H.now - 400)
        #expect(harness.jar.applyRemoteRemoval(remote.key) == [.delete(remote.key)])
        #expect(harness.jar.applyRemoteRemoval(remote.key) == [])
        // Only the local set is left to replicate.
        #expect(harness.jar.drainChanges().map(\.key.name) == ["local"])
    }

    @Test func evictionsARemoteChangeCausesAreReturnedNotRecorded() throws {
        let harness = H(limits: CookieJarLimits(maxPerDomain: 1, maxTotal: 10))
        try harness.set("first=1", url: "https://a.example/")
        _ = harness.jar.drainChanges()
        let remote = Cookie(
            name: "second", value: "2", domain: "a.example", hostOnly: true, path: "/", expires: nil, secure: false,
            httpOnly: false, sameSite: .default, partitioned: false, created: H.now, creationIndex: 0, lastAccess: H.now
        )
        let changes = harness.jar.applyRemote(remote, now: H.now)
        #expect(changes.map(\.key.name).sorted() == ["first", "second"])
        #expect(harness.jar.drainChanges().isEmpty)
    }
}
