import HTTPDNSProtocol

@testable import HTTPDNSCore

extension ReplayRun {
    /// Takes the oldest unchecked action; it must be what the check expects.
    private mutating func next(_ what: String) throws(ReplayProblem) -> Item {
        guard !outbox.isEmpty else { throw ReplayProblem("expected \(what), but the machine did nothing more") }
        return outbox.removeFirst()
    }

    static func yesNo(_ value: Bool) -> String { value ? "yes" : "no" }

    /// An error's `data` member as a check writes it (nil: absent).
    static func render(_ value: JSON?) -> String? {
        guard let value else { return nil }
        if let text = value.stringValue { return text }
        if let number = value.numberValue { return number.literal }
        return "\(value)"
    }

    /// `CHECK_QUERY [as=label] upstream= host= family= timeout= address= url=`.
    mutating func checkQuery(_ fields: ReplayFields) throws(ReplayProblem) {
        let item = try next("a query")
        guard case .query(let index) = item else { throw ReplayProblem("expected a query, got \(describe(item))") }
        let request = queries[index].request
        try fields.check("query " + describe(request)) { key in
            switch key {
            case "as": return fields["as"]
            case "upstream": return request.endpoint.name
            case "host": return request.host
            case "family": return request.family.rawValue
            case "timeout": return String(request.timeoutMs)
            case "url": return request.endpoint.url
            case "address": return .some(request.endpoint.url.flatMap { ServiceURL.host(of: $0) })
            default: return nil
            }
        }
        if let label = fields["as"] { queries[index].label = label }
    }

    /// `CHECK_BATCH [as=label] upstream= hosts=a,b timeout=`.
    mutating func checkBatch(_ fields: ReplayFields) throws(ReplayProblem) {
        let item = try next("a batch")
        guard case .batch(let index) = item else { throw ReplayProblem("expected a batch, got \(describe(item))") }
        let request = batches[index].request
        try fields.check(describe(item)) { key in
            switch key {
            case "as": return fields["as"]
            case "upstream": return request.endpoint.name
            case "hosts": return request.hosts.joined(separator: ",")
            case "timeout": return String(request.timeoutMs)
            default: return nil
            }
        }
        if let label = fields["as"] { batches[index].label = label }
    }

    /// `CHECK_REPLY label ok v4= v6= ttl= ttls=a/b source= upstream= stale=` or
    /// `CHECK_REPLY label error code= reason= limit= retryAfterMs= message~`.
    mutating func checkReply(_ fields: ReplayFields) throws(ReplayProblem) {
        guard fields.words.count == 2, ["ok", "error"].contains(fields.words[1]) else {
            throw ReplayProblem("CHECK_REPLY wants a label and ok or error")
        }
        let label = fields.words[0]
        let item = try next("the reply to \(label)")
        guard case .reply(let replied, let outcome) = item, replied == label else {
            throw ReplayProblem("expected the reply to \(label), got \(describe(item))")
        }
        let what = "reply " + Self.describe(outcome)
        switch (fields.words[1], outcome) {
        case ("ok", .success(let result)):
            try fields.check(what) { key in
                switch key {
                case "host": return result.host
                case "v4": return result.ipv4.joined(separator: ",")
                case "v6": return result.ipv6.joined(separator: ",")
                case "ttl": return String(result.ttl)
                case "ttls": return .some(result.ttls.map { "\($0.ipv4)/\($0.ipv6)" })
                case "source": return result.source.rawValue
                case "upstream": return .some(result.upstream)
                case "stale": return Self.yesNo(result.stale)
                default: return nil
                }
            }
        case ("error", .failure(let error)):
            try fields.check(what) { key in
                switch key {
                case "code": return String(error.code.rawValue)
                case "message": return error.message
                default: return .some(Self.render(error.data[key]))
                }
            }
        default:
            throw ReplayProblem("expected \(fields.words[1]), got \(what)")
        }
    }

    /// `CHECK_UPSTREAM name healthy= lastError= latency= answered= domains=a,b` or
    /// `CHECK_UPSTREAM name absent`.
    func checkUpstream(_ fields: ReplayFields) throws(ReplayProblem) {
        guard let name = fields.words.first else { throw ReplayProblem("CHECK_UPSTREAM wants a name") }
        let found = machine.upstreamStatus.first { $0.name == name }
        if fields.words.contains("absent") {
            if found != nil { throw ReplayProblem("\(name) is an upstream") }
            return
        }
        guard let status = found else { throw ReplayProblem("no upstream \(name)") }
        try fields.check("upstream \(name)") { key in
            switch key {
            case "healthy": return Self.yesNo(status.healthy)
            case "lastError": return .some(status.lastError)
            case "latency": return .some(status.latencyMs.map { String(Int($0)) })
            case "answered": return .some(status.answered.map(String.init))
            case "domains": return .some(status.domains?.joined(separator: ","))
            default: return nil
            }
        }
    }

    /// `CHECK_CACHE host family absent` or `CHECK_CACHE host family addresses= ttl= stale=
    /// negative= noSuchName= upstream=` (ttl: whole seconds left, rounded up; 0 once expired).
    func checkCache(_ fields: ReplayFields) throws(ReplayProblem) {
        guard fields.words.count >= 2, let family = IPFamily(rawValue: fields.words[1]) else {
            throw ReplayProblem("CHECK_CACHE wants a host and ipv4 or ipv6")
        }
        let entry = machine.cache.peek(host: fields.words[0], family: family)
        if fields.words.contains("absent") {
            if let entry { throw ReplayProblem("the cache holds \(entry)") }
            return
        }
        guard let entry else { throw ReplayProblem("the cache holds no \(family) entry of \(fields.words[0])") }
        let left = entry.expiresAt.nanoseconds(since: now)
        try fields.check("cache entry") { key in
            switch key {
            case "addresses": return entry.addresses.joined(separator: ",")
            case "ttl": return String(left > 0 ? now.secondsRoundedUp(until: entry.expiresAt) : 0)
            case "stale": return Self.yesNo(left <= 0)
            case "negative": return Self.yesNo(entry.negative)
            case "noSuchName": return Self.yesNo(entry.noSuchName)
            case "upstream": return .some(entry.upstream)
            default: return nil
            }
        }
    }

    /// `CHECK_REVERSE address uid=N hosts=a,b` (`hosts=none`: not found).
    func checkReverse(_ fields: ReplayFields) throws(ReplayProblem) {
        guard let address = fields.words.first, let uid = fields["uid"].flatMap({ UInt32($0) }) else {
            throw ReplayProblem("CHECK_REVERSE wants an address and uid=")
        }
        let hosts: String?
        do throws(RPCError) {
            hosts = try machine.reverse(ReverseParams(address: address), uid: uid, now: now).hosts.joined(
                separator: ",")
        } catch {
            // Not found, for this uid.
            hosts = nil
        }
        try fields.check("reverse") { key in
            switch key {
            case "uid": return fields["uid"]
            case "hosts": return .some(hosts)
            default: return nil
            }
        }
    }

    /// `CHECK_SERVICE upstream none` or `CHECK_SERVICE upstream current= addresses=a,b
    /// backingOff=yes,no failures=0,1 source=`.
    func checkService(_ fields: ReplayFields) throws(ReplayProblem) {
        guard let name = fields.words.first, let endpoint = machine.settings.upstreams.first(where: { $0.name == name })
        else { throw ReplayProblem("no upstream \(fields.words.first ?? "")") }
        let status = machine.serviceAddresses.status(for: endpoint, now: now)
        if fields.words.contains("none") {
            if let status { throw ReplayProblem("\(name) has service addresses: \(status)") }
            return
        }
        guard let status else { throw ReplayProblem("\(name) has no service addresses") }
        try fields.check("service addresses of \(name)") { key in
            switch key {
            case "current": return status.current
            case "source": return status.source
            case "addresses": return status.addresses.map(\.address).joined(separator: ",")
            case "backingOff": return status.addresses.map { Self.yesNo($0.backingOff) }.joined(separator: ",")
            case "failures": return status.addresses.map { String($0.failures) }.joined(separator: ",")
            case "schedulerError": return .some(status.schedulerError)
            case "nextRefresh": return .some(status.nextRefresh.map { String(Int($0)) })
            default: return nil
            }
        }
    }
}
