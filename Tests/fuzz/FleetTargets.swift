// Targets over the fleet's records as they come out of an opened seal: a machine holding the fleet key
// (or a corrupted value) must not make a daemon store a cookie it could not send, or answer with a
// non-address.

import HTTPDNSProtocol

@testable import HTTPDNSCore

let fleetTargets = [
    FuzzTarget(name: "fleet-records", summary: "opened fleet cache records and cookie changes: checked, round trip") {
        checkFleetRecords($0)
    }
]

private func checkFleetRecords(_ bytes: UnsafeBufferPointer<UInt8>) {
    let plaintext = Array(bytes)
    checkCookieChange(plaintext)
    // A cache record is read under the key of its own host and family (else every mutation fails the
    // host check), and under a fixed one.
    let json = try? JSONParser.parse(plaintext)
    let host = json?["host"]?.stringValue ?? "api.example.com"
    let family = json?["family"]?.stringValue.flatMap(IPFamily.init(rawValue:)) ?? .ipv4
    for (expectedHost, expectedFamily) in [(host, family), ("api.example.com", IPFamily.ipv6)] {
        checkCacheRecord(plaintext, host: expectedHost, family: expectedFamily)
    }
}

private func checkCacheRecord(_ plaintext: [UInt8], host: String, family: IPFamily) {
    guard case .success(let record) = FleetCacheRecord.decode(plaintext, host: host, family: family) else { return }
    require(record.host.hasSameBytes(as: host) && record.family == family, "a record accepted under another key")
    require(record.addresses.count <= FleetCacheRecord.maximumAddresses, "\(record.addresses.count) addresses")
    require(record.negative == record.addresses.isEmpty, "negative and addresses disagree")
    for text in record.addresses {
        guard let address = IPAddress(text), address.family == family else {
            fatalError("accepted \(text.debugDescription) as a \(family) address")
        }
        require(address.description.hasSameBytes(as: text), "address \(text) not in canonical form")
    }
    require(
        FleetCacheRecord.decode(record.encoded(), host: host, family: family) == .success(record),
        "a cache record changed in an encode-then-decode round trip")
    let hit = FleetCacheHit(record: record, nowUnixMs: 1_767_225_600_000, keyMillisecondsLeft: 30_000)
    if let hit {
        require(hit.millisecondsLeft > 0 && hit.millisecondsLeft <= 30_000, "a hit outlives its Redis key")
        require(hit.ttlSeconds > 0 && hit.ttlSeconds <= 30, "hit TTL \(hit.ttlSeconds) s")
    }
}

private func checkCookieChange(_ plaintext: [UInt8]) {
    guard case .success(let change) = FleetCookieChange.decode(plaintext) else { return }
    let key = change.address.key
    require(!change.address.jar.isEmpty, "empty jar name")
    require(change.address.jar.utf8.count <= FleetCookieChange.maximumJarLength, "jar name over its cap")
    require(key.path.utf8.first == UInt8(ascii: "/"), "path \(key.path.debugDescription) does not start with /")
    require(!key.domain.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }, "domain not lowercase")
    require(change.version.updatedAtMs >= 0, "negative update time")
    if case .set(let value) = change.content {
        let cookie = value.cookie(key, creationIndex: 0, lastAccess: 0)
        require(CookieJar.isStorable(cookie), "accepted a cookie the jar could not store")
    }
    guard case .success(let again) = FleetCookieChange.decode(change.encoded()) else {
        fatalError("an encoded change is refused")
    }
    require(again == change && again.address.description.hasSameBytes(as: change.address.description), "round trip")
}
