// libFuzzer entry point for the HTTPDNSProtocol sources, which run.sh compiles into the same module
// (so no import), with the scanner's agreement check from the protocol tests. Every invariant violation traps, which libFuzzer reports as a crash with its input.

/// fatalError, unlike precondition, prints its message in -O builds, so a crash report says which invariant broke.
@inline(__always)
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// One input, four consumers: the JSON parser, the JSON-RPC decoder, the request scanner (against
/// the decoder), and the line framer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    checkParser(bytes)
    checkDecoder(bytes)
    checkScanner(bytes)
    checkFramer(bytes)
    return 0
}

/// The daemon's fast lane reads what the tree reads: the same request, or the same params error.
private func checkScanner(_ bytes: UnsafeBufferPointer<UInt8>) {
    if case .disagreed(let how) = compareScannerWithDecoder(bytes) { fatalError("scanner and decoder differ: \(how)") }
}

/// An accepted text is UTF-8 and survives write-then-parse unchanged; a rejection points inside the input.
private func checkParser(_ bytes: UnsafeBufferPointer<UInt8>) {
    let value: JSON
    do {
        value = try JSONParser.parse(buffer: bytes)
    } catch {
        require((0...bytes.count).contains(error.offset), "error offset \(error.offset) outside the input")
        return
    }
    require(String(validating: bytes, as: UTF8.self) != nil, "accepted invalid UTF-8")
    let encoded = value.encoded
    require(!encoded.contains { $0 < 0x20 }, "raw control character in output")
    guard let reparsed = try? JSONParser.parse(encoded) else { fatalError("output does not parse") }
    require(reparsed == value, "round trip changed the value")
    require(reparsed.encoded == encoded, "round trip changed the bytes")
}

/// Every decoded element gets a one-line response that a client reads back with the same id.
private func checkDecoder(_ bytes: UnsafeBufferPointer<UInt8>) {
    var responses: [([UInt8], RPCID)] = []
    func respond(_ inbound: RPCInbound) {
        var out: [UInt8] = []
        switch inbound {
        case .request(let request):
            let id = request.id ?? .null
            RPCEncoder.writeResult(.object(request.params), id: id, to: &out)
            responses.append((out, id))
        case .invalid(let id, let error):
            require(error.name != "", "error without data.name")
            RPCEncoder.writeError(error, id: id ?? .null, to: &out)
            responses.append((out, id ?? .null))
        }
    }
    switch RPCDecoder.decode(line: bytes, maxBatch: 8) {
    case .single(let inbound): respond(inbound)
    case .batch(let elements):
        require(!elements.isEmpty && elements.count <= 8, "batch size outside 1...maxBatch")
        elements.forEach(respond)
    case .failure(let error):
        var out: [UInt8] = []
        RPCEncoder.writeError(error, id: .null, to: &out)
        responses.append((out, .null))
    }
    for (response, id) in responses {
        require(!response.contains(0x0A), "response contains a newline")
        guard let json = try? JSONParser.parse(response), let read = RPCResponse(json: json) else {
            fatalError("response does not read back")
        }
        require(read.id == id, "response id changed")
    }
}

/// Split the input into reads at positions taken from its own bytes: lines never hold a newline, never
/// exceed the cap, and nothing follows an overflow.
private func checkFramer(_ bytes: UnsafeBufferPointer<UInt8>) {
    let cap = 32
    var framer = LineFramer(maxLineLength: cap)
    var events: [[UInt8]?] = []
    var offset = 0
    var step = 1
    while offset < bytes.count {
        let end = min(bytes.count, offset + step)
        framer.append(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[offset..<end]))
        framer.drain { event in
            require(events.last != .some(nil), "event after tooLong")
            switch event {
            case .line(let line):
                require(!line.contains(0x0A), "line contains a newline")
                require(line.count <= cap, "line longer than the cap")
                require(!line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }, "blank line delivered")
                checkParser(line)
                events.append(Array(line))
            case .tooLong:
                events.append(nil)
            }
        }
        step = Int(bytes[offset] % 7) + 1
        offset = end
    }
    #if FRAMER_SPLIT_INVARIANCE
        // How the bytes were split into reads must not change the outcome. Off by default: the known
        // cap-plus-CR case (PROTO-1 in the unit tests) trips it at once.
        var whole = LineFramer(maxLineLength: cap)
        whole.append(UnsafeRawBufferPointer(bytes))
        var wholeEvents: [[UInt8]?] = []
        whole.drain { event in
            switch event {
            case .line(let line): wholeEvents.append(Array(line))
            case .tooLong: wholeEvents.append(nil)
            }
        }
        require(wholeEvents == events, "split reads changed the framing")
    #endif
}
