import Glibc
import HTTPDNSProtocol

/// The default, human-readable output of each subcommand (resolvectl's habit: the answer first,
/// then a `--` line saying where it came from).
enum HumanFormat {
    static func resolve(_ result: ResolveResult) -> String {
        // resolvectl query's layout: one address a line, aligned under the first.
        let addresses = result.ipv4 + result.ipv6
        let label = "\(result.host): "
        let indent = String(repeating: " ", count: label.count)
        var text = label + (addresses.isEmpty ? "(no addresses)" : addresses.joined(separator: "\n" + indent)) + "\n"
        var notes = ["ttl \(result.ttl)s"]
        if result.stale { notes.append("stale") }
        switch result.source {
        case .cache: notes.append("from cache" + (result.upstream.map { " (upstream \($0))" } ?? ""))
        case .upstream: notes.append("from upstream " + (result.upstream ?? "(unnamed)"))
        case .system: notes.append("from the system resolver")
        case .literal: notes.append("an IP literal")
        case .static: notes.append("from a static entry")
        case .fleet: notes.append("from the fleet" + (result.upstream.map { " (upstream \($0))" } ?? ""))
        }
        text += "-- " + notes.joined(separator: ", ") + "\n"
        return text
    }

    static func reverse(_ result: ReverseResult) -> String {
        var text = "\(result.address): " + result.hosts.joined(separator: " ") + "\n-- ttl \(result.ttl)s\n"
        for name in result.names {
            text += "   \(name.host): ttl \(name.ttl)s, remembered for \(name.rememberedFor)s\n"
        }
        return text
    }

    static func setCookie(_ result: SetCookieResult) -> String {
        var text = "stored \(result.stored) under \(result.host)\n"
        for rejection in result.rejected { text += "rejected #\(rejection.index): \(rejection.reason)\n" }
        return text
    }

    /// Longer values are cut in the table; `--json` shows them whole.
    static let maxValueWidth = 40

    static func cookieTable(_ cookies: [Cookie]) -> String {
        guard !cookies.isEmpty else { return "no cookies\n" }
        var rows = [["DOMAIN", "PATH", "NAME", "VALUE", "EXPIRES", "FLAGS"]]
        for cookie in cookies {
            var flags: [String] = []
            if cookie.hostOnly { flags.append("host-only") }
            if cookie.secure { flags.append("secure") }
            if cookie.httpOnly { flags.append("httponly") }
            if cookie.sameSite != .default { flags.append("samesite=\(cookie.sameSite.rawValue)") }
            if cookie.partitioned { flags.append("partitioned") }
            let value =
                cookie.value.count > maxValueWidth
                ? String(cookie.value.prefix(maxValueWidth - 3)) + "..." : cookie.value
            rows.append([
                cookie.domain, cookie.path, cookie.name, value, cookie.expires.map(utcDate) ?? "session",
                flags.isEmpty ? "-" : flags.joined(separator: ","),
            ])
        }
        return table(rows) + "\(cookies.count) cookie\(cookies.count == 1 ? "" : "s")\n"
    }

    static func status(_ status: StatusResult) -> String {
        var text = "httpdnsd \(status.version), up \(duration(status.uptime))\n"
        let cache = status.cache
        text += "cache: \(cache.entries) entries, \(cache.hits) hits, \(cache.misses) misses, "
        text += "\(cache.staleServed) stale served\n"
        text += "cookies: \(status.cookieCount)\n"
        for upstream in status.upstreams {
            let health = upstream.healthy ? "healthy" : "failing" + (upstream.lastError.map { ": \($0)" } ?? "")
            text += "upstream \(upstream.name) (\(upstream.kind)): \(health)"
            if let domains = upstream.domains {
                text += domains.isEmpty ? ", in no route" : ", for \(domains.joined(separator: " "))"
            }
            text += "\n"
            if let warning = upstream.warning { text += "  warning: \(warning)\n" }
            if let list = upstream.serviceAddresses { text += serviceAddresses(list) }
        }
        if let fleet = status.fleet { text += self.fleet(fleet) }
        if let network = status.network { text += self.network(network) }
        return text
    }

    /// `network: 2 changes, last 2026-01-01 00:00:00 UTC`, or `network: not watched`.
    static func network(_ network: StatusResult.Network) -> String {
        guard network.watching else { return "network: not watched\n" }
        let last = network.lastChange.map { ", last \(utcDate($0))" } ?? ""
        return "network: \(network.changes) change\(network.changes == 1 ? "" : "s")\(last)\n"
    }

    /// `  service addresses (scheduler): 127.0.0.3 rotated out, 127.0.0.5 in use, 127.0.0.6`, with
    /// the scheduler's last failure on a line of its own.
    static func serviceAddresses(_ list: ServiceAddressesStatus) -> String {
        let addresses = list.addresses.map { address in
            address.address + (address.address == list.current ? " in use" : address.backingOff ? " rotated out" : "")
        }
        var text = "  service addresses (\(list.source)): \(addresses.joined(separator: ", "))\n"
        if let error = list.schedulerError { text += "  scheduler: failing: \(error)\n" }
        return text
    }

    /// `fleet: connected, lag 0.004 s, outbox 0, 0 rejected`, with the last error while not connected.
    static func fleet(_ fleet: StatusResult.Fleet) -> String {
        var line = "fleet: \(fleet.state)"
        if !fleet.connected, let error = fleet.lastError { line += " (\(error))" }
        if let lag = fleet.lag { line += ", lag \(lag) s" }
        return line + ", outbox \(fleet.outbox), \(fleet.rejected) rejected\n"
    }

    /// `1d 2h 3m 4s`, leading zero units left out.
    static func duration(_ seconds: Double) -> String {
        var rest = Int(max(0, seconds))
        let units = [("d", 86_400), ("h", 3_600), ("m", 60)]
        var parts: [String] = []
        for (suffix, size) in units where rest >= size || !parts.isEmpty {
            parts.append("\(rest / size)\(suffix)")
            rest %= size
        }
        parts.append("\(rest)s")
        return parts.joined(separator: " ")
    }

    /// `2026-01-01 00:00:00 UTC`.
    static func utcDate(_ unixSeconds: Int64) -> String {
        var time = time_t(unixSeconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return String(unixSeconds) }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }

    /// Left-aligned columns separated by two spaces; the last column is not padded.
    static func table(_ rows: [[String]]) -> String {
        guard let columns = rows.first?.count else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var text = ""
        for row in rows {
            var line = ""
            for (i, cell) in row.enumerated() {
                line += cell
                if i < columns - 1 { line += String(repeating: " ", count: widths[i] - cell.count + 2) }
            }
            text += line + "\n"
        }
        return text
    }
}
