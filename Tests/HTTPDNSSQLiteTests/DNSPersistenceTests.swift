import HTTPDNSCore
import Testing

@testable import HTTPDNSSQLite

struct DNSPersistenceTests {
    static let entries = [
        PersistedDNSEntry(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1", "192.0.2.2"], upstream: "https://doh.example/",
            expiresAtUnix: 1_800_000_010, negative: false),
        PersistedDNSEntry(
            host: "a.example", family: .ipv6, addresses: ["2001:db8::1"], upstream: nil, expiresAtUnix: 1_800_000_020,
            negative: false),
        PersistedDNSEntry(
            host: "gone.example", family: .ipv4, addresses: [], upstream: "https://doh.example/",
            expiresAtUnix: 1_800_000_030, negative: true),
    ]
    // Per uid least recently used first, deliberately not in IP or expiry order; one address with
    // two hosts for uid 1000, and the same address remembered for another uid.
    static let owners = [
        PersistedAddressOwner(
            uid: 0, ip: "192.0.2.2", host: "a.example", answerExpiresAtUnix: 1_800_000_000,
            expiresAtUnix: 1_800_003_600),
        PersistedAddressOwner(
            uid: 1000, ip: "2001:db8::1", host: "a.example", answerExpiresAtUnix: 1_800_000_050,
            expiresAtUnix: 1_800_000_100),
        PersistedAddressOwner(
            uid: 1000, ip: "192.0.2.1", host: "b.example", answerExpiresAtUnix: 1_799_999_000,
            expiresAtUnix: 1_800_009_000),
        PersistedAddressOwner(
            uid: 1000, ip: "192.0.2.1", host: "a.example", answerExpiresAtUnix: 1_800_000_060,
            expiresAtUnix: 1_800_009_060),
        PersistedAddressOwner(
            uid: 4_294_967_294, ip: "192.0.2.1", host: "c.example", answerExpiresAtUnix: 1_800_000_060,
            expiresAtUnix: 1_800_009_060),
    ]

    @Test func saveAndLoadAcrossARestartKeepingOrder() throws {
        let directory = TemporaryDirectory()
        let store = try StoreFixtures.open(directory)
        #expect(store.saveDNSAndWait(entries: Self.entries, owners: Self.owners).failure == nil)
        store.close()
        let reopened = try StoreFixtures.open(directory)
        defer { reopened.close() }
        let loaded = try reopened.loadDNS()
        #expect(loaded.entries == Self.entries)
        #expect(loaded.owners == Self.owners)
    }

    @Test func saveReplacesThePreviousSnapshot() throws {
        let directory = TemporaryDirectory()
        let store = try StoreFixtures.open(directory)
        defer { store.close() }
        #expect(store.saveDNSAndWait(entries: Self.entries, owners: Self.owners).failure == nil)
        #expect(store.saveDNSAndWait(entries: [Self.entries[2]], owners: [Self.owners[0]]).failure == nil)
        let loaded = try store.loadDNS()
        #expect(loaded.entries == [Self.entries[2]])
        #expect(loaded.owners == [Self.owners[0]])
        #expect(store.saveDNSAndWait(entries: [], owners: []).failure == nil)
        #expect(try store.loadDNS().entries.isEmpty)
    }

    @Test func dnsAndCookiesAreSeparate() throws {
        let directory = TemporaryDirectory()
        let store = try StoreFixtures.open(directory)
        defer { store.close() }
        #expect(store.commitAndWait([(1, .upsert(StoreFixtures.cookie("x")))]).failure == nil)
        #expect(store.saveDNSAndWait(entries: [], owners: []).failure == nil)
        #expect(try store.loadCookies(uid: 1, now: StoreFixtures.now).map(\.name) == ["x"])
    }
}
