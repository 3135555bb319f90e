// Targets over HTTPDNSProtocol: the JSON parser, JSON-RPC decoding, line framing, and method params.

import HTTPDNSProtocol

let protocolTargets = [
    FuzzTarget(name: "json", summary: "JSONParser: write-then-parse round trip, depth cap, error offsets") {
        checkJSON($0)
    },
    FuzzTarget(name: "rpc", summary: "RPCDecoder: every element answered on one line with its id, batch cap") {
        checkDecoder($0)
    },
    FuzzTarget(name: "framer", summary: "LineFramer: any split of the reads frames like the whole, caps held") {
        checkFramer($0)
    },
    FuzzTarget(name: "scanner", summary: "RequestScanner against RPCDecoder: the same request or the same error") {
        checkScanner($0)
    },
    FuzzTarget(name: "params", summary: "typed params of every method: accepted params round-trip, errors name fields")
    {
        checkParams($0)
    },
]

/// An accepted text is UTF-8, within the depth cap, and survives write-then-parse unchanged; a rejection
/// points inside the input.
private func checkJSON(_ bytes: UnsafeBufferPointer<UInt8>) {
    let value: JSON
    do {
        value = try JSONParser.parse(buffer: bytes)
    } catch {
        require((0...bytes.count).contains(error.offset), "error offset \(error.offset) outside the input")
        return
    }
    require(String(validating: bytes, as: UTF8.self) != nil, "accepted invalid UTF-8")
    let depth = nestingDepth(value)
    require(depth <= JSONParser.defaultMaxDepth, "accepted nesting \(depth) over the cap")
    require((try? JSONParser.parse(buffer: bytes, maxDepth: depth)) != nil, "refused at its own depth \(depth)")
    if depth > 0 {
        require((try? JSONParser.parse(buffer: bytes, maxDepth: depth - 1)) == nil, "depth \(depth) under a lower cap")
    }
    let encoded = value.encoded
    require(!encoded.contains { $0 < 0x20 }, "raw control character in output")
    guard let reparsed = try? JSONParser.parse(encoded) else { fatalError("output does not parse") }
    require(reparsed == value, "round trip changed the value")
    require(reparsed.encoded == encoded, "round trip changed the bytes")
}

/// Containers around the deepest value: a scalar is 0, `[]` is 1.
private func nestingDepth(_ value: JSON) -> Int {
    switch value {
    case .array(let elements): return 1 + (elements.map(nestingDepth).max() ?? 0)
    case .object(let object): return 1 + (object.map { nestingDepth($0.value) }.max() ?? 0)
    default: return 0
    }
}

/// Every decoded element gets a one-line response that a client reads back with the same id.
private func checkDecoder(_ bytes: UnsafeBufferPointer<UInt8>) {
    let maxBatch = 8
    var responses: [([UInt8], RPCID)] = []
    func respond(_ inbound: RPCInbound) {
        var out = JSONOutput()
        switch inbound {
        case .request(let request):
            let id = request.id ?? .null
            RPCEncoder.writeResult(.object(request.params), id: id, to: &out)
            responses.append((out.bytes, id))
        case .invalid(let id, let error):
            require(error.name != "", "error without data.name")
            RPCEncoder.writeError(error, id: id ?? .null, to: &out)
            responses.append((out.bytes, id ?? .null))
        }
    }
    switch RPCDecoder.decode(line: bytes, maxBatch: maxBatch) {
    case .single(let inbound): respond(inbound)
    case .batch(let elements):
        require(!elements.isEmpty && elements.count <= maxBatch, "batch size outside 1...maxBatch")
        elements.forEach(respond)
    case .failure(let error):
        var out = JSONOutput()
        RPCEncoder.writeError(error, id: .null, to: &out)
        responses.append((out.bytes, .null))
    }
    for (response, id) in responses {
        require(!response.contains(0x0A), "response contains a newline")
        guard let json = try? JSONParser.parse(response), let read = RPCResponse(json: json) else {
            fatalError("response does not read back")
        }
        require(read.id == id, "response id changed")
    }
}

/// Feeds the input in reads whose sizes come from its own bytes: lines never hold a newline, never exceed
/// the cap, blank lines are skipped, nothing follows an overflow, and the events are exactly those of the
/// whole input framed at once (how a peer's bytes are split into reads must not change what it said).
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
                events.append(Array(line))
            case .tooLong:
                events.append(nil)
            }
        }
        require(framer.overflowed || framer.pendingByteCount <= cap + 1, "more than a line held")
        step = Int(bytes[offset] % 7) + 1
        offset = end
    }
    var whole = LineFramer(maxLineLength: cap)
    whole.append(UnsafeRawBufferPointer(bytes))
    var wholeEvents: [[UInt8]?] = []
    var endingLines: [Int] = []
    whole.drainLines(while: { event, endsInput in
        switch event {
        case .line(let line):
            if endsInput { endingLines.append(wholeEvents.count) }
            wholeEvents.append(Array(line))
        case .tooLong: wholeEvents.append(nil)
        }
        return true
    })
    require(wholeEvents == events, "split reads changed the framing")
    // A line ends the input exactly when its newline is the input's last byte.
    let lastLine = wholeEvents.lastIndex { $0 != nil }
    let input = Array(bytes)
    let endsWithLastLine = lastLine.map { index -> Bool in
        let line = wholeEvents[index]!
        return input.count > line.count && input.suffix(line.count + 1) == ArraySlice(line + [0x0A])
            || input.count > line.count + 1 && input.suffix(line.count + 2) == ArraySlice(line + [0x0D, 0x0A])
    }
    let expected = endsWithLastLine == true && wholeEvents.last != .some(nil) ? [lastLine!] : []
    require(endingLines == expected, "a line said to end the input does not, or one that does was not")
}

/// The daemon's fast lane reads what the tree reads: a line the scanner accepts is the same request to
/// `RPCDecoder` (id, method, and params that read to the same typed value or fail with the same error).
private func checkScanner(_ bytes: UnsafeBufferPointer<UInt8>) {
    if case .disagreed(let how) = compareScannerWithDecoder(bytes) { fatalError("scanner and decoder differ: \(how)") }
}

/// The members each method's params may name, written apart from the types that read them; a switch, so a
/// new method cannot be fuzzed without its members.
private func paramsMembers(_ method: Method) -> Set<String> {
    switch method {
    case .resolve: ["host", "family", "allowStale", "timeoutMs"]
    case .reverse: ["address"]
    case .getCookieHeader: ["url", "host", "forScript", "siteForCookies", "topLevelNavigation"]
    case .handleSetCookie: ["url", "host", "setCookie"]
    case .deleteCookies: ["url", "domain", "all", "name", "host"]
    case .listCookies: ["domain"]
    case .importCookies: ["format", "data"]
    case .exportCookies: ["format"]
    case .flushCache: ["host"]
    case .status: []
    case .showCache: []
    case .statistics: []
    case .resetStatistics: []
    case .metrics: []
    case .monitor: []
    case .discover: []
    case .forget: ["address", "all"]
    }
}

/// The `params` of every method, read by each method's typed params: accepted params write out and read
/// back equal; refused ones are -32602 naming a member of that method (or an element of one).
private func checkParams(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let json = try? JSONParser.parse(buffer: bytes) else { return }
    var objects: [JSONObject] = []
    switch RPCDecoder.decode(json: json, maxBatch: 16) {
    case .single(.request(let request)): objects.append(request.params)
    case .batch(let elements):
        for case .request(let request) in elements { objects.append(request.params) }
    default: break
    }
    // A bare object counts as the params themselves, so seeds need not carry the envelope.
    if let object = json.objectValue, object["jsonrpc"] == nil { objects.append(object) }
    for object in objects {
        let params = Params(object)
        for method in Method.allCases { roundTrip(params, method.paramsType, fields: paramsMembers(method)) }
        if let resolve = try? ResolveParams(params), let timeout = resolve.timeoutMs {
            require((1...Int(ResolveParams.maxTimeoutMs)).contains(timeout), "timeoutMs \(timeout) outside its range")
        }
    }
}

private func roundTrip<P: MethodParams>(_ params: Params, _ type: P.Type, fields: Set<String>) {
    let value: P
    do {
        value = try P(params)
    } catch {
        require(error.code == .invalidParams, "params refused with \(error.code.rawValue), not -32602")
        guard let field = error.data["field"]?.stringValue else { fatalError("-32602 without data.field") }
        let member = field.split(separator: "[", maxSplits: 1).first.map(String.init) ?? field
        require(fields.contains(member), "data.field \"\(field)\" is not a member of these params")
        guard let json = try? JSONParser.parse(error.json.encoded), RPCError(json: json) == error else {
            fatalError("the error does not read back")
        }
        return
    }
    let written = value.json
    require(written.keys.allSatisfy(fields.contains), "written params hold an unknown member")
    guard let reparsed = try? JSONParser.parse(JSON.object(written).encoded).objectValue else {
        fatalError("written params do not parse")
    }
    guard let again = try? P(Params(reparsed)) else { fatalError("written params are refused") }
    require(again == value, "params changed in a write-then-read round trip")
}
