// Targets over the upstream answer codecs: DNS wire (RFC 1035, as RFC 8484 carries it), Alibaba JSON (single
// and batch), Tencent text, and DoH JSON; and the HTTP/1.1 response parser that plain-HTTP upstreams are read with. Whatever an upstream sends, an accepted answer holds only
// addresses of the families asked for, within the caps, with a TTL in 0...2^31-1.

import HTTPDNSProtocol

@testable import HTTPDNSCore

let upstreamTargets = [
    FuzzTarget(name: "dns-wire", summary: "DNS wire / RFC 8484 answers, for the question they carry; query round trip")
    {
        checkDNSWire($0)
    },
    FuzzTarget(name: "alibaba", summary: "Alibaba HTTPDNS JSON, /d and the /resolve batch, each family") {
        checkAlibaba($0)
    },
    FuzzTarget(name: "tencent", summary: "Tencent HTTPDNS text answers, each family") {
        checkTencent($0)
    },
    FuzzTarget(name: "doh-json", summary: "DoH JSON (application/dns-json) answers, A and AAAA") {
        checkDoHJSON($0)
    },
    FuzzTarget(name: "scheduler", summary: "Alibaba scheduler answers and the saved service-address file") {
        checkScheduler($0)
    },
    FuzzTarget(name: "http1-response", summary: "HTTP/1.1 responses: split anywhere reads the same, limits hold") {
        checkHTTP1Response($0)
    },
]

/// What every accepted answer must be, whichever upstream it came from.
private func checkAnswer(_ result: Result<UpstreamAnswer, UpstreamError>, families: Set<IPFamily>) {
    guard case .success(let answer) = result else { return }
    require((0...UpstreamAnswer.maxTTL).contains(answer.ttl), "TTL \(answer.ttl) outside 0...2^31-1")
    for family in IPFamily.allCases {
        let addresses = answer.addresses(family)
        require(families.contains(family) || addresses.isEmpty, "\(family) addresses in an answer that did not ask")
        require(addresses.count <= UpstreamAnswer.maxAddressesPerFamily, "\(addresses.count) \(family) addresses")
        require(Set(addresses).count == addresses.count, "duplicate addresses")
        for address in addresses {
            require(address.family == family, "a \(address.family) address among the \(family) ones")
            require(address.bytes.count == (family == .ipv4 ? 4 : 16), "address of \(address.bytes.count) bytes")
            require(IPAddress(address.description) == address, "\(address) does not read back from its text")
        }
    }
    require(answer.nameExists || answer.isEmpty, "addresses for a name that does not exist")
}

private func families(_ family: AddressFamily) -> Set<IPFamily> {
    Set(IPFamily.allCases.filter { family.includes($0) })
}

/// The message is read as the answer to its own first question (so mutations get past the question check),
/// and to a fixed one. Every query the builder writes, turned into an empty response, reads as NODATA.
private func checkDNSWire(_ bytes: UnsafeBufferPointer<UInt8>) {
    let message = Array(bytes)
    var host = "www.example.com"
    var type = DNSRecordType.a
    if let (labels, end) = DNSWire.readName(message, at: 12) {
        host = labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
        if end + 2 <= message.count, message[end] == 0, message[end + 1] == 28 { type = .aaaa }
    }
    for (name, recordType) in [(host, type), ("www.example.com", DNSRecordType.a)] {
        checkAnswer(
            DoHWire.parse(status: 200, body: message, host: name, type: recordType), families: [recordType.family])
        guard let query = DNSWire.makeQuery(host: name, type: recordType, id: 0x4242) else { continue }
        require(query.count <= 12 + DNSWire.maxNameLength + 4, "query of \(query.count) bytes")
        var response = query
        response[2] |= 0x80  // QR: the same message, as a response with no records.
        guard case .success(let answer) = DNSWire.parseResponse(response, host: name, type: recordType) else {
            fatalError("the query for \(name.debugDescription) does not read back as a response")
        }
        require(answer.isEmpty && answer.nameExists && answer.ttl == UpstreamAnswer.defaultTTL, "empty answer misread")
    }
}

private func checkAlibaba(_ bytes: UnsafeBufferPointer<UInt8>) {
    let body = Array(bytes)
    for family in AddressFamily.allCases {
        checkAnswer(AlibabaV1.parseResolve(status: 200, body: body, family: family), families: families(family))
        guard case .success(let answers) = AlibabaV1.parseBatch(status: 200, body: body, family: family) else {
            continue
        }
        for (host, answer) in answers {
            require(HostName.validate(host) == .success(host), "batch answer under host \(host.debugDescription)")
            checkAnswer(.success(answer), families: families(family))
        }
    }
}

private func checkTencent(_ bytes: UnsafeBufferPointer<UInt8>) {
    for family in AddressFamily.allCases {
        checkAnswer(TencentHTTPDNS.parse(status: 200, body: Array(bytes), family: family), families: families(family))
    }
}

private func checkDoHJSON(_ bytes: UnsafeBufferPointer<UInt8>) {
    for type in [DNSRecordType.a, .aaaa] {
        checkAnswer(DoHJSON.parse(status: 200, body: Array(bytes), type: type), families: [type.family])
    }
}

/// A scheduler answer decides where every name goes: an accepted one holds usable IP literals
/// only, each once, within the caps; the saved file reads back what it wrote and holds the same.
private func checkScheduler(_ bytes: UnsafeBufferPointer<UInt8>) {
    let body = Array(bytes)
    if case .success(let addresses) = AlibabaScheduler.parse(status: 200, body: body) {
        require(!addresses.isEmpty, "an empty list accepted")
        require(addresses.count <= 2 * AlibabaScheduler.maxAddresses, "\(addresses.count) addresses")
        require(Set(addresses).count == addresses.count, "duplicate addresses")
        for address in addresses {
            require(ServiceAddressRules.isUsable(address), "\(address) accepted")
            require(IPAddress(address.description) == address, "\(address) does not read back from its text")
        }
    }
    if let lists = ServiceAddressFile.decode(body) {
        require(
            ServiceAddressFile.decode(ServiceAddressFile.encode(lists)) == lists, "the saved file does not round-trip")
        for list in lists {
            for text in list.addresses {
                guard let address = IPAddress(text) else { fatalError("\(text.debugDescription) kept") }
                require(ServiceAddressRules.isUsable(address) && address.description == text, "\(text) kept")
            }
        }
    }
}

/// Small limits, so that inputs of a few KiB reach each of them.
private let http1Limits = HTTP1ResponseParser.Limits(
    maxBodyBytes: 256, maxHeadBytes: 1024, maxTrailerBytes: 128, maxChunkLineBytes: 32)

/// The first byte picks a piece size; the rest is a response stream, read whole and in pieces of that
/// size, then ended. Both readings give the same outcome; an accepted response keeps within the limits,
/// has a final status, and fields that are tokens with values free of CR, LF and NUL.
private func checkHTTP1Response(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let first = bytes.first else { return }
    let stream = Array(bytes.dropFirst())
    let whole = readHTTP1(stream, step: max(1, stream.count))
    let split = readHTTP1(stream, step: 1 + Int(first) % 13)
    require(whole == split, "reading in pieces changed the outcome: \(whole) / \(split)")
    guard case .success(let response) = whole else { return }
    require(response.body.count <= http1Limits.maxBodyBytes, "a body of \(response.body.count) bytes")
    require((200...999).contains(response.status), "final status \(response.status)")
    require(response.status != 204 && response.status != 304 || response.body.isEmpty, "a body on \(response.status)")
    for field in response.fields {
        require(
            !field.name.isEmpty && !field.name.utf8.contains { $0 <= 0x20 || $0 == 0x3A }, "field name \(field.name)")
        require(!field.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }, "field value \(field.value)")
        require(field.value.first != " " && field.value.last != " ", "untrimmed value \(field.value)")
    }
}

/// Feeds `stream` in pieces of `step` bytes until a response or an error, then ends it; bytes left
/// after a response mark its connection unusable, as they do within one piece.
private func readHTTP1(_ stream: [UInt8], step: Int) -> Result<HTTP1Response, HTTP1ResponseError> {
    var parser = HTTP1ResponseParser(limits: http1Limits)
    var offset = 0
    do throws(HTTP1ResponseError) {
        while offset < stream.count {
            let end = min(stream.count, offset + step)
            let response = try stream[offset..<end].withUnsafeBytes { raw in
                Result { () throws(HTTP1ResponseError) in try parser.feed(raw) }
            }.get()
            offset = end
            if var response {
                if offset < stream.count { response.connectionReusable = false }
                require(parser.receivedBytes == offset, "received \(parser.receivedBytes) of \(offset) bytes")
                return .success(response)
            }
        }
        return .success(try parser.finish())
    } catch {
        return .failure(error)
    }
}
