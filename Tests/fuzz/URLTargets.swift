// Targets over the URL and address parsers the cookie jar and the resolver key their state by.

import HTTPDNSProtocol

@testable import HTTPDNSCore
@testable import HTTPDNSURL

let urlTargets = [
    FuzzTarget(name: "url", summary: "RequestURL, IP literals and host names: canonical forms re-parse unchanged") {
        checkURL($0)
    },
    FuzzTarget(
        name: "whatwg-url",
        summary: "HTTPURL: fast lane = full parser, serialization re-parses to itself and agrees with RFC 3986"
    ) {
        checkWHATWGURL($0)
    },
]

/// A stand-in for libidn2: ASCII names lowercased, anything else refused.
private let asciiOnly: DomainToASCII = { name in name.utf8.allSatisfy { $0 < 0x80 } ? name.lowercased() : nil }

private let bases = [
    HTTPURL("https://user:pw@a.example:8443/dir/page?q#f")!, HTTPURL("http://192.0.2.1/")!,
    HTTPURL("ws://[2001:db8::1]/x/y/")!,
]

private func checkWHATWGURL(_ bytes: UnsafeBufferPointer<UInt8>) {
    if let plain = HTTPURL.plain(utf8: bytes) {
        let full = URLParser.parse(bytes, base: nil, toASCII: nil, fastLane: false)
        require(full == plain, "the fast lane read \(plain), the full parser \(String(describing: full))")
        require(plain.agreesWithRFC3986(utf8: bytes), "the plain URL \(plain) is ambiguous as written")
    }
    for base in [nil] + bases {
        guard let url = HTTPURL(utf8: bytes, base: base, toASCII: asciiOnly) else { continue }
        let text = url.description
        guard let again = HTTPURL(text, toASCII: asciiOnly) else { fatalError("\(text) does not parse again") }
        require(again == url && again.description.hasSameBytes(as: text), "\(text) changed when re-parsed")
        require(url.agreesWithRFC3986(text), "the serialization \(text) is ambiguous")
        require(url.path.utf8.first == UInt8(ascii: "/"), "path \(url.path)")
        if case .domain(let name) = url.host {
            require(!name.isEmpty && !name.utf8.contains(where: HostParser.isForbiddenDomainByte), "host \(name)")
            require(!name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }, "host \(name) not lowercased")
        }
        // What the daemon accepts is read alike by both: same scheme, host and port as the text says.
        if base == nil, case .success(let request) = RequestURL.parse(utf8: bytes, toASCII: asciiOnly) {
            require(request == RequestURL(url), "RequestURL differs from HTTPURL")
            require(
                request.schemeKind == url.scheme && request.port == url.port && request.path == url.path
                    && request.host.utf8.count > 0, "RequestURL lost a part of \(url)")
        }
    }
}

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
