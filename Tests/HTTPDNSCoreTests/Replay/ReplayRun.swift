import HTTPDNSProtocol
import HTTPDNSTestSupport

@testable import HTTPDNSCore

/// What differed, and where: the scenario file, its step and line.
struct ReplayFailure: Error, CustomStringConvertible {
    var file: String
    var step: ReplayScript.Step?
    var problem: String

    var description: String {
        guard let step else { return "\(file): \(problem)" }
        let iteration = step.iteration.isEmpty ? "" : " \(step.iteration)"
        return "\(file): STEP \(step.number) \(step.command) (line \(step.line))\(iteration): \(problem)"
    }
}

/// A `ResolverMachine` driven by a `ReplayScript`: it plays the interpreter's part (the
/// timers, the transport, the callers) on a clock only the script moves, and holds every
/// exchange the machine starts and every reply it sends, in order, until a check takes it.
/// Whatever the script does not check by its end is a failure too.
struct ReplayRun {
    /// One thing the machine did that a check must account for.
    enum Item {
        case query(Int)
        case batch(Int)
        case reply(String, Result<ResolveResult, RPCError>)
        case fetch(ServiceAddressFetch)
    }

    struct Query {
        var request: UpstreamAttemptRequest
        var label: String?
        var done = false
    }

    struct Batch {
        var request: UpstreamBatchRequest
        var label: String?
        var done = false
    }

    let script: ReplayScript
    var machine: ResolverMachine
    /// Starts away from zero, so that nothing depends on the clock's origin.
    var now = MonotonicInstant(seconds: 1_000)
    let wallStart: Int64 = 1_700_000_000
    var startedAt = MonotonicInstant(seconds: 1_000)
    var timers: [ResolverTimer: (at: MonotonicInstant, order: Int)] = [:]
    var serviceTimers: [String: (at: MonotonicInstant, order: Int)] = [:]
    var timerOrder = 0
    var outbox: [Item] = []
    var queries: [Query] = []
    var batches: [Batch] = []
    /// Waiting callers' request labels, by caller id.
    var callerLabels: [UInt64: String] = [:]
    /// Every request's label, and its reply once it came.
    var replies: [String: Result<ResolveResult, RPCError>?] = [:]
    var logs: [String] = []
    var step: ReplayScript.Step?

    init(_ script: ReplayScript) throws(ReplayFailure) {
        self.script = script
        machine = try Self.machine(script.configuration, daemonUID: script.daemonUID, file: script.name)
    }

    static func settings(_ lines: [String], daemonUID: UInt32, file: String, step: ReplayScript.Step? = nil)
        throws(ReplayFailure) -> ResolverSettings
    {
        let text = "[Resolver]\n" + lines.joined(separator: "\n") + "\n"
        switch DaemonConfiguration.parse(text: text, path: file) {
        case .success(let parsed):
            // The daemon's: 16 upstream workers, 4 of them for one owner (ResolverService).
            return ResolverSettings(parsed.0.resolver, workers: 16, workersPerOwner: 4, daemonUID: daemonUID)
        case .failure(let error):
            throw ReplayFailure(file: file, step: step, problem: "the configuration does not parse: \(error)")
        }
    }

    static func machine(_ lines: [String], daemonUID: UInt32, file: String) throws(ReplayFailure) -> ResolverMachine {
        ResolverMachine(
            settings: try settings(lines, daemonUID: daemonUID, file: file), rules: BasicDomainRules())
    }

    var wallNow: Int64 { wallStart + now.nanoseconds(since: startedAt) / 1_000_000_000 }

    /// Plays every step; the first that fails ends the run.
    mutating func run() throws(ReplayFailure) {
        for step in script.steps {
            self.step = step
            do throws(ReplayProblem) {
                try perform(step)
            } catch {
                // What else waits to be checked often says why.
                let waiting = outbox.prefix(4).map(describe).joined(separator: "; ")
                throw ReplayFailure(
                    file: script.name, step: step,
                    problem: error.text + (waiting.isEmpty ? "" : " (unchecked after it: \(waiting))"))
            }
        }
        step = nil
        if !outbox.isEmpty {
            throw ReplayFailure(
                file: script.name, step: nil,
                problem: "the scenario ended with actions no step checked: "
                    + outbox.map(describe).joined(separator: "; "))
        }
    }

    // MARK: carrying actions out

    /// Takes the machine's actions (and its service addresses') as the interpreter does.
    mutating func drain() {
        while machine.hasActions || machine.serviceAddresses.hasActions {
            for action in machine.takeActions() { take(action) }
            for action in machine.serviceAddresses.takeActions() { take(action) }
        }
    }

    private mutating func take(_ action: ResolverAction) {
        switch action {
        case .answer(let caller, let outcome):
            guard let label = callerLabels.removeValue(forKey: caller) else {
                outbox.append(.reply("caller \(caller) (unknown)", outcome))
                return
            }
            replies[label] = outcome
            outbox.append(.reply(label, outcome))
        case .query(let request):
            queries.append(Query(request: request))
            outbox.append(.query(queries.count - 1))
        case .queryBatch(let request):
            batches.append(Batch(request: request))
            outbox.append(.batch(batches.count - 1))
        case .armTimer(let timer, let at):
            timerOrder += 1
            timers[timer] = (at, timerOrder)
        case .cancelTimer(let timer):
            timers[timer] = nil
        case .askFleet(let flight, _, _, _):
            // No fleet here: the interpreter without one hands the name to the upstreams.
            machine.fleetDeferredToUpstreams(flight: flight, now: now)
        case .reportToFleet:
            break
        case .log(_, let line):
            logs.append(line)
        }
    }

    private mutating func take(_ action: ServiceAddressAction) {
        switch action {
        case .fetch(let fetch): outbox.append(.fetch(fetch))
        case .persist: break
        case .armTimer(let key, let at):
            timerOrder += 1
            serviceTimers[key] = (at, timerOrder)
        case .log(_, let line): logs.append(line)
        }
    }

    /// Moves the clock to `end`, firing each timer due by then at its own instant, in order.
    mutating func pass(until end: MonotonicInstant) {
        while true {
            let resolver = timers.filter { $0.value.at <= end }.min {
                ($0.value.at, $0.value.order) < ($1.value.at, $1.value.order)
            }
            let service = serviceTimers.filter { $0.value.at <= end }.min {
                ($0.value.at, $0.value.order) < ($1.value.at, $1.value.order)
            }
            if let resolver,
                service.map({ (resolver.value.at, resolver.value.order) < ($0.value.at, $0.value.order) })
                    ?? true
            {
                timers[resolver.key] = nil
                now = max(now, resolver.value.at)
                machine.timerFired(resolver.key, now: now)
            } else if let service {
                serviceTimers[service.key] = nil
                now = max(now, service.value.at)
                machine.serviceAddresses.timerFired(key: service.key, now: now)
            } else {
                break
            }
            drain()
        }
        now = max(now, end)
    }

    // MARK: describing

    func describe(_ item: Item) -> String {
        switch item {
        case .query(let index): return "query " + describe(queries[index].request)
        case .batch(let index):
            let request = batches[index].request
            return "batch \(request.endpoint.name) [\(request.hosts.joined(separator: ","))]"
        case .reply(let label, let outcome): return "reply \(label) " + Self.describe(outcome)
        case .fetch(let fetch): return "service address fetch of \(fetch.upstream) at \(fetch.address)"
        }
    }

    func describe(_ request: UpstreamAttemptRequest) -> String {
        let address = request.endpoint.url.flatMap { ServiceURL.host(of: $0) } ?? "-"
        return
            "\(request.endpoint.name) \(request.host) \(request.family.rawValue) timeout=\(request.timeoutMs) address=\(address)"
    }

    static func describe(_ outcome: Result<ResolveResult, RPCError>) -> String {
        switch outcome {
        case .success(let result):
            var text =
                "ok v4=\(result.ipv4.joined(separator: ",")) v6=\(result.ipv6.joined(separator: ",")) ttl=\(result.ttl)"
            if let ttls = result.ttls { text += " ttls=\(ttls.ipv4)/\(ttls.ipv6)" }
            text += " source=\(result.source.rawValue) stale=\(result.stale ? "yes" : "no")"
            if let upstream = result.upstream { text += " upstream=\(upstream)" }
            return text
        case .failure(let error):
            return "error code=\(error.code.rawValue) reason=\(error.data["reason"]?.stringValue ?? "none") "
                + "message=\"\(error.message)\""
        }
    }
}

/// A step's own failure, before the driver adds where it happened.
struct ReplayProblem: Error {
    var text: String
    init(_ text: String) { self.text = text }
}
