// Targets over the URL and address parsers the cookie jar and the resolver key their state by.

import HTTPDNSProtocol

@testable import HTTPDNSCore

let urlTargets = [
    FuzzTarget(name: "url", summary: "RequestURL, IP literals and host names: canonical forms re-parse unchanged") {
        checkURL($0)
    }
]

private func checkURL(_ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let url = RequestURL(text) {
        require(RequestURL.supportedSchemes.contains(url.scheme), "scheme \(url.scheme)")
        require(!url.host.isEmpty, "empty host")
        require(!url.host.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }, "host \(url.host) not lowercased")
        require(url.isIPLiteral == (IPLiteral.canonical(url.host) != nil), "isIPLiteral wrong for \(url.host)")
        if url.isIPLiteral {
            require(
                IPLiteral.canonical(url.host).map { $0.hasSameBytes(as: url.host) } == true, "IP host not canonical")
        }
        require(url.path.isEmpty || url.path.utf8.first.map { $0 == 0x2F || $0 == 0x5C } == true, "path \(url.path)")
        guard let again = RequestURL(url.description) else { fatalError("\(url) does not parse again") }
        require(again == url && again.description.hasSameBytes(as: url.description), "\(url) changed when re-parsed")
    }
    checkAddress(text)
    if let canonical = IPLiteral.canonical(text) {
        require(
            IPLiteral.canonical(canonical).map { $0.hasSameBytes(as: canonical) } == true, "canonical not idempotent")
    }
    if case .success(let host) = HostName.validate(text) {
        require(host.utf8.count <= HostName.maxLength, "host name of \(host.utf8.count) bytes")
        require(HostName.validate(host) == .success(host), "validated host \(host) not a fixed point")
        require(DNSWire.labels(of: host) != nil, "valid host \(host) cannot go on the wire")
    }
    if let canonical = HostNameSyntax.canonicalASCII(text) {
        require(HostNameSyntax.canonicalASCII(canonical) == canonical, "canonicalASCII not idempotent")
    }
}

/// An address parses to the right number of bytes, prints canonically, and reads back from that text.
private func checkAddress(_ text: String) {
    for (parsed, family) in [(IPAddress(ipv4: text), IPFamily.ipv4), (IPAddress(ipv6: text), .ipv6)] {
        guard let address = parsed else { continue }
        require(address.family == family, "parsed as \(address.family)")
        require(address.bytes.count == (family == .ipv4 ? 4 : 16), "\(address.bytes.count) bytes")
        require(IPAddress(address.description) == address, "\(address) does not read back")
        require(IPAddress(bytes: address.bytes) == address, "bytes do not rebuild the address")
        require(IPAddress(text) == address, "the either-family parser disagrees on \(text)")
        let unmapped = address.unmappingIPv4
        require(unmapped == address || (family == .ipv6 && unmapped.family == .ipv4), "unmapping changed family")
    }
}
