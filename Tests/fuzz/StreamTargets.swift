// Targets over what the daemon writes in pieces and what it reads from Redis: the streamed
// exportCookies and listCookies answers (Sources/HTTPDNSServer/CookieStreams.swift, compiled in),
// and the bounded RESP reader (Sources/HTTPDNSRedis/RESPReader.swift, compiled in).

import HTTPDNSProtocol

@testable import HTTPDNSCore

let streamTargets = [
    FuzzTarget(
        name: "export-stream",
        summary: "streamed export/list: any piece size writes the one-shot answer's bytes, every call moves on"
    ) {
        checkExportStream($0)
    },
    FuzzTarget(name: "resp", summary: "RESPReader: split anywhere reads the same, limits hold, never traps") {
        checkRESP($0)
    },
]

private let now: Int64 = 1_767_225_600

/// The first byte picks the piece size; the rest is a cookies.txt imported into a jar. The jar's
/// snapshot written in pieces of that size must be byte for byte the answer written at once, each
/// call must write something until the last, and the export must parse back to the jar's text.
private func checkExportStream(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let first = bytes.first else { return }
    let budget = 1 + Int(first) * 37
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    let jar = CookieJar(rules: BasicDomainRules(), limits: CookieJarLimits(maxPerDomain: 50, maxTotal: 200))
    _ = jar.importNetscape(text, now: now)
    let cookies = (try? jar.list(now: now)) ?? []

    var whole = JSONOutput()
    let netscape = jar.exportNetscape(now: now)
    ExportCookiesResult(data: netscape.text, leftOut: netscape.leftOut).write(to: &whole)
    let export = NetscapeExportStream(cookies)
    let exported = pieces(budget) { export.writeNext(to: &$0, budget: $1) }
    require(exported == whole.bytes, "the streamed export differs from the one-shot answer")
    guard case .object(let object)? = try? JSONParser.parse(exported), object["data"]?.stringValue != nil else {
        fatalError("the streamed export is not {\"data\":string}")
    }

    let records = cookies
    var listed = JSONOutput()
    ListCookiesResult(cookies: records).write(to: &listed)
    let list = ArrayResultStream(cookies: records)
    require(pieces(budget) { list.writeNext(to: &$0, budget: $1) } == listed.bytes, "the streamed list differs")
}

/// Calls `writeNext` until it says done; every call must write something.
private func pieces(_ budget: Int, _ writeNext: (inout JSONOutput, Int) -> Bool) -> [UInt8] {
    var out = JSONOutput()
    for _ in 0..<1_000_000 {
        let before = out.count
        let done = writeNext(&out, budget)
        require(out.count > before, "a piece wrote nothing")
        if done { return out.bytes }
    }
    fatalError("the stream never finished")
}

/// The input as a reply stream, read whole and split at a place the first byte picks: both
/// readings give the same outcomes; a bulk over the limit is refused from its header; what the
/// reader holds stays within its limits.
private func checkRESP(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let first = bytes.first else { return }
    let data = Array(bytes.dropFirst())
    let limits = RESPReader.Limits(maxBulkBytes: 64, maxReplyBytes: 2_048, maxDepth: 4)
    let whole = read(data, limits: limits, step: max(data.count, 1))
    let split = read(data, limits: limits, step: 1 + Int(first) % 7)
    require(whole == split, "reading in pieces changed the outcome")
    for outcome in whole {
        if case .reply(let reply) = outcome {
            require(bulkLengths(reply).allSatisfy { $0 <= 64 }, "a bulk over the limit")
        }
    }
}

private func read(_ data: [UInt8], limits: RESPReader.Limits, step: Int) -> [RESPReader.Outcome] {
    var reader = RESPReader(limits: limits)
    var outcomes: [RESPReader.Outcome] = []
    var offset = 0
    while offset < data.count {
        let end = min(data.count, offset + step)
        data[offset..<end].withUnsafeBytes { reader.feed($0) }
        offset = end
        while true {
            let outcome = reader.next()
            if outcome == .needMore { break }
            outcomes.append(outcome)
            guard case .reply = outcome else { return outcomes }
        }
    }
    return outcomes
}

private func bulkLengths(_ reply: RedisReply) -> [Int] {
    switch reply {
    case .bulk(let bytes): return [bytes.count]
    case .array(let elements): return elements.flatMap(bulkLengths)
    default: return []
    }
}
