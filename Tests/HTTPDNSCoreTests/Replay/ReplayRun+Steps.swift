import HTTPDNSProtocol

@testable import HTTPDNSCore

/// A step's `key=value` words (`key~text`: contains; `key<=n`, `key>=n`: bounds), and the rest.
struct ReplayFields {
    struct Field {
        var key: String
        var op: String
        var value: String
    }

    var fields: [Field] = []
    var words: [String] = []

    init(_ arguments: some Sequence<String>) {
        for word in arguments {
            // The first operator in the word splits it; a key is a name (a host name too).
            guard let at = word.firstIndex(where: { "=~<>".contains($0) }), at > word.startIndex,
                word[..<at].allSatisfy({ $0.isLetter || $0.isNumber || ".-_".contains($0) })
            else {
                words.append(word)
                continue
            }
            var end = word.index(after: at)
            if word[at] == "<" || word[at] == ">" {
                guard end < word.endIndex, word[end] == "=" else {
                    words.append(word)
                    continue
                }
                end = word.index(after: end)
            }
            fields.append(Field(key: String(word[..<at]), op: String(word[at..<end]), value: String(word[end...])))
        }
    }

    subscript(key: String) -> String? { fields.first { $0.key == key }?.value }

    /// Checks every field against `actual`, which renders a key's value (nil: not a key here).
    func check(_ what: String, _ actual: (String) -> String??) throws(ReplayProblem) {
        for field in fields {
            guard let rendered = actual(field.key) else {
                throw ReplayProblem("\(what): no field \(field.key)")
            }
            let value = rendered ?? "none"
            let matches: Bool
            switch field.op {
            case "~": matches = value.contains(field.value)
            case "<=", ">=":
                guard let have = Double(value), let bound = Double(field.value) else {
                    throw ReplayProblem("\(what): \(field.key) is \(value), not a number to compare")
                }
                matches = field.op == "<=" ? have <= bound : have >= bound
            default: matches = value == field.value
            }
            if !matches {
                throw ReplayProblem("\(what): \(field.key) is \(value), expected \(field.op)\(field.value)")
            }
        }
    }
}

extension ReplayRun {
    mutating func perform(_ step: ReplayScript.Step) throws(ReplayProblem) {
        let fields = ReplayFields(step.arguments)
        switch step.command {
        case "RESOLVE": try resolve(fields)
        case "REPLY":
            guard let target = fields.words.first else { throw ReplayProblem("REPLY wants a query") }
            let index = try pendingQuery(target)
            try reply(index, ReplayFields(step.arguments.dropFirst()))
        case "REPLY_ALL":
            let matching = queries.indices.filter { index in
                let request = queries[index].request
                return !queries[index].done
                    && fields["upstream"].map { $0 == request.endpoint.name } ?? true
                    && fields["prefix"].map { request.host.hasPrefix($0) } ?? true
            }
            let rest = step.arguments.filter { !$0.hasPrefix("upstream=") && !$0.hasPrefix("prefix=") }
            for index in matching { try reply(index, ReplayFields(rest)) }
        case "BATCH_REPLY": try batchReply(fields)
        case "TIME_PASSES":
            guard fields.words.first == "ELAPSE", fields.words.count == 2, let ns = Self.duration(fields.words[1])
            else { throw ReplayProblem("TIME_PASSES wants ELAPSE <seconds> or <n>ms") }
            pass(until: now.advanced(byNanoseconds: ns))
        case "FLUSH": try flush(fields)
        case "NETWORK_CHANGE":
            guard let raw = fields.words.first, let policy = NetworkChangePolicy(rawValue: raw) else {
                throw ReplayProblem("NETWORK_CHANGE wants refresh, flush or ignore")
            }
            let touched = machine.networkChanged(policy, now: now)
            drain()
            try fields.check("network change") { $0 == "touched" ? String(touched) : nil }
        case "PREFETCH_START":
            machine.startPrefetch(now: now)
            drain()
        case "START_SERVICE_ADDRESSES":
            machine.serviceAddresses.start(persisted: [], now: now, wallNow: wallNow)
            drain()
        case "APPLY":
            let settings: ResolverSettings
            do {
                settings = try Self.settings(step.block, daemonUID: script.daemonUID, file: script.name)
            } catch {
                throw ReplayProblem(error.problem)
            }
            machine.apply(settings)
            machine.serviceAddresses.apply(
                machine.settings.serviceAddresses, upstreams: machine.settings.upstreams, now: now, wallNow: wallNow)
            drain()
        case "DISCARD": try discard(fields)
        case "CHECK_QUERY": try checkQuery(fields)
        case "CHECK_BATCH": try checkBatch(fields)
        case "CHECK_REPLY": try checkReply(fields)
        case "CHECK_PENDING":
            guard let label = fields.words.first, let reply = replies[label] else {
                throw ReplayProblem("no request \(fields.words.first ?? "")")
            }
            if let reply { throw ReplayProblem("\(label) was answered: \(Self.describe(reply))") }
        case "CHECK_NOTHING":
            if let item = outbox.first { throw ReplayProblem("expected nothing, got \(describe(item))") }
        case "CHECK_UPSTREAM": try checkUpstream(fields)
        case "CHECK_STATS":
            let cache = machine.cache
            try fields.check("cache") { key in
                switch key {
                case "entries": return String(cache.entryCount)
                case "hits": return String(cache.hits)
                case "misses": return String(cache.misses)
                case "staleServed": return String(cache.staleServed)
                default: return nil
                }
            }
        case "CHECK_CACHE": try checkCache(fields)
        case "CHECK_REVERSE": try checkReverse(fields)
        case "CHECK_SERVICE": try checkService(fields)
        case "CHECK_LOG":
            guard let text = fields.words.first else { throw ReplayProblem("CHECK_LOG wants a text") }
            if !logs.contains(where: { $0.contains(text) }) {
                throw ReplayProblem("no log line holds \"\(text)\"; the lines: \(logs)")
            }
        case "CHECK_NO_LOG":
            guard let text = fields.words.first else { throw ReplayProblem("CHECK_NO_LOG wants a text") }
            if let line = logs.first(where: { $0.contains(text) }) { throw ReplayProblem("logged: \(line)") }
        case "CHECK_QUIESCENT":
            let want = fields.words.first != "no"
            if machine.isQuiescent != want { throw ReplayProblem("quiescent is \(machine.isQuiescent)") }
        default:
            throw ReplayProblem("no such command")
        }
    }

    // MARK: events

    private mutating func resolve(_ fields: ReplayFields) throws(ReplayProblem) {
        guard fields.words.count == 2 else { throw ReplayProblem("RESOLVE wants a label and a host") }
        let label = fields.words[0]
        guard replies[label] == nil else { throw ReplayProblem("the label \(label) is taken") }
        var params = ResolveParams(host: fields.words[1])
        var uid: UInt32 = 0
        var account: UInt32?
        for field in fields.fields {
            switch field.key {
            case "family":
                guard let family = AddressFamily(rawValue: field.value) else { throw ReplayProblem("family?") }
                params.family = family
            case "uid": uid = UInt32(field.value) ?? 0
            case "account": account = UInt32(field.value)
            case "timeout": params.timeoutMs = Int(field.value)
            case "staleAfter": params.staleAfterMs = Int(field.value)
            case "stale": params.allowStale = field.value == "yes"
            case "billed": params.billedRoutesOnly = field.value == "yes"
            default: throw ReplayProblem("RESOLVE has no field \(field.key)")
            }
        }
        var inline: Result<ResolveResult, RPCError>?
        let caller = machine.resolve(params, uid: uid, account: account, now: now) { inline = $0 }
        replies[label] = .some(nil)
        // A reply made in the call goes before what the call started (its refresh).
        if let inline {
            replies[label] = inline
            outbox.append(.reply(label, inline))
        } else if let caller {
            callerLabels[caller] = label
        }
        drain()
    }

    /// The query `target` names: a label a check gave it, else the oldest unanswered one of
    /// that host.
    private func pendingQuery(_ target: String) throws(ReplayProblem) -> Int {
        if let index = queries.firstIndex(where: { $0.label == target }) {
            guard !queries[index].done else { throw ReplayProblem("\(target) was answered already") }
            return index
        }
        guard let index = queries.firstIndex(where: { !$0.done && $0.request.host == target }) else {
            throw ReplayProblem("no unanswered query of \(target)")
        }
        return index
    }

    private mutating func reply(_ index: Int, _ fields: ReplayFields) throws(ReplayProblem) {
        queries[index].done = true
        let result = try Self.upstreamResult(fields)
        machine.attemptFinished(queries[index].request.id, result, now: now)
        drain()
    }

    /// `v4=a,b v6=c ttl=N` (or `ttl4=`, `ttl6=`), `NXDOMAIN`, or `FAIL code`.
    static func upstreamResult(_ fields: ReplayFields) throws(ReplayProblem) -> Result<UpstreamAnswer, UpstreamError> {
        if let fail = fields.words.firstIndex(of: "FAIL") {
            guard fail + 1 < fields.words.count else { throw ReplayProblem("FAIL wants a code") }
            return .failure(UpstreamError(try errorCode(fields.words[fail + 1])))
        }
        func addresses(_ key: String) throws(ReplayProblem) -> [IPAddress] {
            guard let list = fields[key], !list.isEmpty else { return [] }
            var out: [IPAddress] = []
            for text in list.split(separator: ",") {
                guard let address = IPAddress(String(text)) else { throw ReplayProblem("not an address: \(text)") }
                out.append(address)
            }
            return out
        }
        let ttl = Int(fields["ttl"] ?? "300") ?? 300
        return .success(
            UpstreamAnswer(
                ipv4: try addresses("v4"), ipv6: try addresses("v6"), ipv4TTL: Int(fields["ttl4"] ?? "") ?? ttl,
                ipv6TTL: Int(fields["ttl6"] ?? "") ?? ttl, nameExists: !fields.words.contains("NXDOMAIN")))
    }

    /// `timeout`, `transport:detail`, `http:500`, `service:Code`, `dns:2`, `malformed:detail`,
    /// `truncated`, `toolarge`, `chain:detail`.
    static func errorCode(_ text: String) throws(ReplayProblem) -> UpstreamError.Code {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        let detail = parts.count > 1 ? parts[1] : ""
        switch parts[0] {
        case "timeout": return .timeout
        case "transport": return .transport(detail)
        case "http": if let status = Int(detail) { return .httpStatus(status) }
        case "service": return .serviceError(code: detail)
        case "dns": if let rcode = Int(detail) { return .dnsStatus(rcode) }
        case "malformed": return .malformed(detail)
        case "truncated": return .truncated
        case "toolarge": return .responseTooLarge
        case "chain": return .unusableChain(detail)
        default: break
        }
        throw ReplayProblem("no upstream error \(text)")
    }

    /// `BATCH_REPLY target host=addr/ttl ...` or `BATCH_REPLY target FAIL code`.
    private mutating func batchReply(_ fields: ReplayFields) throws(ReplayProblem) {
        guard let target = fields.words.first else { throw ReplayProblem("BATCH_REPLY wants a batch") }
        guard
            let index = batches.firstIndex(where: { $0.label == target && !$0.done })
                ?? batches.firstIndex(where: { !$0.done && $0.request.hosts.first == target })
        else { throw ReplayProblem("no unanswered batch \(target)") }
        batches[index].done = true
        let result: Result<[String: UpstreamAnswer], UpstreamError>
        if let fail = fields.words.firstIndex(of: "FAIL"), fail + 1 < fields.words.count {
            result = .failure(UpstreamError(try Self.errorCode(fields.words[fail + 1])))
        } else {
            var answers: [String: UpstreamAnswer] = [:]
            for field in fields.fields {
                let parts = field.value.split(separator: "/")
                guard parts.count == 2, let address = IPAddress(String(parts[0])), let ttl = Int(parts[1]) else {
                    throw ReplayProblem("a batch answer is host=address/ttl, not \(field.key)=\(field.value)")
                }
                answers[field.key] =
                    address.family == .ipv4
                    ? UpstreamAnswer(ipv4: [address], ttl: ttl) : UpstreamAnswer(ipv6: [address], ttl: ttl)
            }
            result = .success(answers)
        }
        machine.batchFinished(batches[index].request.id, result, now: now)
        drain()
    }

    private mutating func flush(_ fields: ReplayFields) throws(ReplayProblem) {
        guard let target = fields.words.first else { throw ReplayProblem("FLUSH wants a host or all") }
        let uid = UInt32(fields["uid"] ?? "0") ?? 0
        let outcome: Result<FlushCacheResult, RPCError>
        do throws(RPCError) {
            outcome = .success(
                try machine.flushCache(FlushCacheParams(host: target == "all" ? nil : target), uid: uid))
        } catch {
            outcome = .failure(error)
        }
        drain()
        try fields.check("flush") { key in
            switch (key, outcome) {
            case ("uid", _): return fields["uid"]
            case ("flushed", .success(let result)): return String(result.flushed)
            case ("error", .failure(let error)): return String(error.code.rawValue)
            case ("flushed", .failure(let error)): return "error \(error.code.rawValue)"
            case ("error", .success): return "none"
            default: return nil
            }
        }
    }

    /// `DISCARD kind=query|reply|batch|any [prefix=] [upstream=] [count=n]`: takes every unchecked
    /// action of that kind (queries by host prefix and upstream, replies by label prefix) out of
    /// the outbox, unanswered, wherever it is: what a scenario says it does not look at.
    private mutating func discard(_ fields: ReplayFields) throws(ReplayProblem) {
        let kind = fields["kind"] ?? "any"
        let prefix = fields["prefix"] ?? ""
        let upstream = fields["upstream"]
        var count = 0
        outbox.removeAll { item in
            let taken: Bool
            switch item {
            case .query(let index):
                let request = queries[index].request
                taken =
                    (kind == "query" || kind == "any") && request.host.hasPrefix(prefix)
                    && upstream.map { $0 == request.endpoint.name } ?? true
            case .batch(let index):
                taken = (kind == "batch" || kind == "any") && batches[index].request.hosts[0].hasPrefix(prefix)
            case .reply(let label, _):
                taken = (kind == "reply" || kind == "any") && label.hasPrefix(prefix)
            case .fetch:
                taken = kind == "any"
            }
            if taken { count += 1 }
            return taken
        }
        try fields.check("discard") { key in
            switch key {
            case "kind", "prefix", "upstream": return fields[key]
            case "count": return String(count)
            default: return nil
            }
        }
    }

    /// `1.5` seconds, or `40ms`.
    static func duration(_ text: String) -> Int64? {
        if text.hasSuffix("ms"), let ms = Int64(text.dropLast(2)) { return ms * 1_000_000 }
        guard let seconds = Double(text) else { return nil }
        return Int64((seconds * 1_000).rounded()) * 1_000_000
    }
}
