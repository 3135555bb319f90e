import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

// Seeing the daemon at work, as resolvectl's show-cache, statistics, reset-statistics and
// monitor do for systemd-resolved, and its metrics for Prometheus.

struct ShowCacheCommand: SingleCallCommand {
    static let words = ["show-cache"]
    static let synopsis = ""
    static let abstract = "Show the cached answers you may see (root: all of them), with TTL left and upstream."
    static let details = """
        Root and the daemon's own user see every entry; other users see the entries of the names
        they were handed addresses for. One line per address: name, family, address (or "-" when
        the upstream said there is none), seconds left, the upstream that answered, and "stale"
        for an answer past its TTL that is kept to be served while the upstreams fail.

        Example:
          httpdnsctl show-cache

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    var method: Method { .showCache }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? { ShowCacheResult(json: result).map(HumanFormat.cache) }
}

struct StatisticsCommand: SingleCallCommand {
    static let words = ["statistics"]
    static let synopsis = ""
    static let abstract = "Show the daemon's counters since it started or since reset-statistics."
    static let details = """
        Cache hits and misses, queries and failures per upstream, and cookie operations of every
        user together (counts only).

        Example:
          httpdnsctl statistics

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    var method: Method { .statistics }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? { StatisticsResult(json: result).map(HumanFormat.statistics) }
}

struct ResetStatisticsCommand: SingleCallCommand {
    static let words = ["reset-statistics"]
    static let synopsis = ""
    static let abstract = "Start the statistics counters again from zero (root or the daemon's user only)."
    static let details = """
        Other users get error -32004 (exit status 1). metrics is not reset: its counters count
        since the daemon started, as Prometheus expects.

        Example:
          httpdnsctl reset-statistics    # as root

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    var method: Method { .resetStatistics }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? {
        ResetStatisticsResult(json: result).map { "statistics reset at \(HumanFormat.utcDate($0.since))\n" }
    }
}

struct MetricsCommand: SingleCallCommand {
    static let words = ["metrics"]
    static let synopsis = ""
    static let abstract = "Print the daemon's metrics in the Prometheus text exposition format."
    static let details = """
        What node_exporter's textfile collector reads (the package's httpdnsd-metrics.timer,
        disabled by default, writes it every minute). Counters count since the daemon started.

        Example:
          httpdnsctl metrics > /tmp/httpdnsd.prom

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    var method: Method { .metrics }
    var params: JSONObject { JSONObject() }
    func human(_ result: JSON) -> String? { MetricsResult(json: result)?.text }
}

struct MonitorCommand: Subcommand {
    static let words = ["monitor"]
    static let synopsis = ""
    static let abstract = "Show resolves and cookie changes as they happen (root: every user's), until interrupted."
    static let details = """
        One line per event: the time, the uid, and a resolve's name and answer (or error), or a
        cookie's name and domain as it is stored, deleted or rejected (never its value). A line
        "dropped N events" says that many were left out because this reader was too slow. With
        --json each event is its params object, one a line.

        Example:
          httpdnsctl monitor

        """

    init(_ arguments: [String]) throws(UsageError) {
        _ = try Self.parse(arguments).positionals()
    }

    /// Prints each event as it comes (nothing waits for the end, which is the daemon's close).
    func run(_ connection: HTTPDNSConnection, json: JSONStyle?) throws(CommandFailure) -> String {
        do {
            _ = try connection.subscribe(Method.monitor.rawValue)
            while let (method, params) = try connection.nextNotification() {
                guard method == MonitorResult.eventMethod else { continue }
                let line = json.map { $0.render(params) } ?? HumanFormat.monitorEvent(params)
                try? FileDescriptor.standardOutput.writeAll(Array(line.utf8))
            }
        } catch {
            throw .client(error)
        }
        return ""
    }
}

extension HumanFormat {
    static func cache(_ result: ShowCacheResult) -> String {
        var rows: [[String]] = []
        for entry in result.entries {
            let notes = (entry.upstream ?? "-") + (entry.stale ? " stale" : "")
            for address in entry.addresses.isEmpty ? ["-"] : entry.addresses {
                rows.append([entry.host, entry.family, address, "\(entry.ttl)s", notes])
            }
        }
        guard !rows.isEmpty else { return "(no cached answers)\n" }
        return table([["NAME", "FAMILY", "ADDRESS", "TTL", "UPSTREAM"]] + rows)
    }

    static func statistics(_ result: StatisticsResult) -> String {
        var text = "Since: \(utcDate(result.since))\n\nCache\n"
        text += "  Current entries: \(result.cache.entries)\n  Hits: \(result.cache.hits)\n"
        text += "  Misses: \(result.cache.misses)\n  Stale answers served: \(result.cache.staleServed)\n"
        text += "\nUpstreams\n"
        for upstream in result.upstreams {
            text += "  \(upstream.name): \(upstream.queries) queries, \(upstream.failures) failed\n"
        }
        text += "\nCookies\n  Stored: \(result.cookies.stored)\n  Rejected: \(result.cookies.rejected)\n"
        text += "  Deleted: \(result.cookies.deleted)\n  Headers built: \(result.cookies.headers)\n"
        return text
    }

    /// `12:00:01.250 uid 1000 resolve a.example: 192.0.2.1 (cache, ttl 57s)`
    static func monitorEvent(_ event: JSON) -> String {
        let milliseconds = event["time"]?.numberValue?.int64Value ?? 0
        // The time of day of `utcDate`'s `2026-01-01 00:00:00 UTC`.
        let stamp = utcDate(milliseconds / 1000).dropFirst(11).prefix(8)
        let fraction = String(1000 + milliseconds % 1000).dropFirst()
        var line = "\(stamp).\(fraction)"
        if let uid = event["uid"]?.numberValue?.int64Value { line += " uid \(uid)" }
        let string = { (key: String) in event[key]?.stringValue ?? "" }
        switch string("type") {
        case "resolve":
            line += " resolve \(string("host"))"
            if let error = event["error"] {
                line += ": error \(error["code"]?.encodedString ?? "") \(error["name"]?.stringValue ?? "")"
            } else {
                let addresses = (event["ipv4"]?.arrayValue ?? []) + (event["ipv6"]?.arrayValue ?? [])
                let list = addresses.compactMap(\.stringValue).joined(separator: " ")
                var notes = [string("source")]
                if let upstream = event["upstream"]?.stringValue { notes.append(upstream) }
                notes.append("ttl \(event["ttl"]?.numberValue?.int64Value ?? 0)s")
                if event["stale"]?.boolValue == true { notes.append("stale") }
                line += ": \(list.isEmpty ? "(no addresses)" : list) (\(notes.joined(separator: ", ")))"
            }
        case "cookie":
            if string("action") == "rejected" {
                line += " cookie rejected for \(string("domain")) (\(string("reason")))"
            } else {
                line += " cookie \(string("action")) \(string("name")) for \(string("domain"))\(string("path"))"
            }
        case "dropped":
            line += " dropped \(event["count"]?.numberValue?.int64Value ?? 0) events (read too slowly)"
        default:
            line += " " + event.encodedString
        }
        return line + "\n"
    }
}
