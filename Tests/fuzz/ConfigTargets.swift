// Targets over the configuration: the INI reader with every setting's grammar behind it, and the value
// grammars on their own.

@testable import HTTPDNSCore

let configTargets = [
    FuzzTarget(name: "config", summary: "httpdnsd.conf: diagnostics name real lines and keys, accepted values hold") {
        checkConfiguration($0)
    },
    FuzzTarget(name: "config-values", summary: "time spans, sizes, IP literals, Redis= and users: round trips") {
        checkConfigValues($0)
    },
]

/// Errors and warnings point at a line of the file and a key of the grammar, a refused secret is never
/// repeated, and an accepted configuration holds only values the daemon can use as they are.
private func checkConfiguration(_ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    // The reader's own notion of a line: Characters, so "\r\n" is one break.
    let lineCount = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }.count
    let secrets = secretValues(text)
    switch DaemonConfiguration.parse(text: text, path: "/fuzz.conf") {
    case .failure(let problems):
        for error in problems.errors {
            require((1...lineCount).contains(error.line), "error on line \(error.line) of \(lineCount)")
            if let key = error.key {
                require(
                    ConfigurationParser.knownKeys.values.contains { $0.contains(key) },
                    "error names unknown key \(key)")
            }
            if error.key == "SecretKey" {
                // A secret that happens to be part of the fixed message is not a leak.
                // The message: the location before it is the file's name and a line number, which
                // a short secret ("4" on line 4) may spell by chance.
                for secret in secrets where !secret.isEmpty && !secretErrorMessage.contains(secret) {
                    require(!error.message.contains(secret), "a refused SecretKey= is repeated in the error")
                }
            }
        }
        require(problems.errors.map(\.line) == problems.errors.map(\.line).sorted(), "problems out of file order")
    case .success(let (configuration, warnings)):
        for warning in warnings {
            require((0...lineCount).contains(warning.line), "warning on line \(warning.line) of \(lineCount)")
        }
        checkAccepted(configuration)
        // Every printed form is the same whatever the secret is.
        var other = configuration
        if other.resolver.secretKey != nil { other.resolver.secretKey = ConfigSecret("other") }
        require(printedForms(configuration) == printedForms(other), "the secret key shows when printed")
    }
}

/// The message of a refused secret, from a secret that appears nowhere in it.
private let secretErrorMessage: String = {
    guard case .failure(let problems) = DaemonConfiguration.parse(text: "[Resolver]\nSecretKey=x y\n", path: "/f")
    else {
        fatalError("a secret with a space is accepted")
    }
    return problems.first.message
}()

private func printedForms(_ configuration: DaemonConfiguration) -> [String] {
    var dumped = ""
    dump(configuration, to: &dumped)
    return ["\(configuration)", String(reflecting: configuration), dumped]
}

/// Values of `SecretKey=` lines as the reader will see them (roughly: trimmed after the first `=`).
private func secretValues(_ text: String) -> [String] {
    text.split { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }.compactMap { line in
        let trimmed = line.trimmingWhitespace()
        guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals].trimmingWhitespace() == "SecretKey"
        else { return nil }
        return String(trimmed[trimmed.index(after: equals)...].trimmingWhitespace())
    }
}

private func checkAccepted(_ configuration: DaemonConfiguration) {
    let resolver = configuration.resolver
    require(!resolver.upstreams.isEmpty, "no upstream")
    for upstream in resolver.upstreams {
        if upstream.kind.needsURL {
            guard let url = upstream.url else { fatalError("\(upstream.kind) upstream without a URL") }
            // The URL reads the same to the request side: an http(s) URL whose host is an address or a name.
            guard let parsed = RequestURL(url), ["http", "https"].contains(parsed.scheme) else {
                fatalError("accepted upstream URL \(url.debugDescription) is not an http(s) URL")
            }
            require(
                parsed.isIPLiteral || (try? HostName.validate(parsed.host).get()) != nil,
                "upstream URL host \(parsed.host.debugDescription) is neither an address nor a host name")
        }
    }
    require(resolver.timeoutMs > 0, "Timeout= of 0")
    require(resolver.minTTLMs >= 0 && resolver.minTTLMs <= resolver.maxTTLMs, "MinTTL= outside 0...MaxTTL=")
    require(resolver.maxStaleMs >= 0 && resolver.negativeTTLMs >= 0, "a negative time span")
    for host in resolver.prefetch + resolver.staticAnswers.map(\.host) + [resolver.tlsName].compactMap({ $0 }) {
        require(HostName.validate(host) == .success(host), "accepted host name \(host.debugDescription)")
    }
    // Every route names upstreams that exist and valid domains, each routed once.
    let names = Set(resolver.upstreams.map(\.name))
    require(names.count == resolver.upstreams.count, "two upstreams of one name")
    var routed: Set<String> = []
    for route in resolver.routes {
        require(!route.upstreams.isEmpty && !route.domains.isEmpty, "an empty Route=")
        for domain in route.domains {
            require(HostName.validate(domain) == .success(domain), "accepted routed domain \(domain.debugDescription)")
            require(routed.insert(domain).inserted, "\(domain) routed twice")
        }
    }
    for name in resolver.routes.flatMap(\.upstreams) + (resolver.defaultRoute ?? []) {
        require(names.contains(name), "a route names no upstream: \(name.debugDescription)")
    }
    for answer in resolver.staticAnswers {
        require(!answer.addresses.isEmpty, "Static= without an address")
        for address in answer.addresses {
            require(IPAddress(address) != nil, "Static= accepted \(address.debugDescription), not an IP address")
        }
    }
    let counts = [
        resolver.cacheSize, resolver.maxUpstreamQueries, resolver.maxUpstreamQueriesPerUser,
        resolver.upstreamQueryRatePerUser, resolver.upstreamQueryBurstPerUser,
        configuration.cookies.maxPerDomain, configuration.cookies.maxTotal, configuration.server.maxLineLength,
        configuration.server.maxConnections, configuration.server.maxConnectionsPerUser,
        configuration.server.maxRequestsInFlight, configuration.server.maxBatch,
    ]
    require(counts.allSatisfy { $0 > 0 }, "a count or size of 0")
    require(configuration.server.idleExitMs >= 0, "negative IdleExit=")
    for path in [
        resolver.secretKeyFile, resolver.caFile, configuration.server.socket, configuration.fleet?.keyFile,
        configuration.fleet?.passwordFile,
    ] {
        guard let path else { continue }
        require(path.utf8.first == UInt8(ascii: "/"), "accepted relative path \(path.debugDescription)")
    }
    if let socket = configuration.server.socket {
        require(socket.utf8.count <= ConfigurationParser.maximumSocketPathBytes, "socket path too long for sun_path")
    }
    if let fleet = configuration.fleet {
        require(FleetConfiguration.isValidName(fleet.name), "accepted fleet name \(fleet.name.debugDescription)")
        checkRedisAddress(fleet.redis)
    }
}

/// A Redis address is an IP or host name, a port and a database, and reads back from its own text.
private func checkRedisAddress(_ address: FleetRedisAddress) {
    if case .tcp(let host, let port, let database) = address {
        require(
            IPAddress(host) != nil || HostName.validate(host) == .success(host),
            "Redis= host \(host.debugDescription) is neither an IP address nor a host name")
        require((1...65_535).contains(port) && database >= 0, "Redis= port or database out of range")
    }
    require(FleetRedisAddress.parse(address.description) == .success(address), "\(address) does not read back")
}

/// Each line of the input through each value grammar on its own.
private func checkConfigValues(_ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(32).map(String.init) {
        if let milliseconds = ConfigTimeSpan.milliseconds(line) {
            require(milliseconds >= 0, "negative time span")
            // Written in milliseconds it reads back the same (when that still fits in microseconds).
            if milliseconds <= Int.max / 1_000 {
                require(ConfigTimeSpan.milliseconds("\(milliseconds)ms") == milliseconds, "\(milliseconds)ms differs")
            }
        }
        if let size = ConfigByteSize.bytes(line) {
            require(size >= 0, "negative size")
            require(ConfigByteSize.bytes(String(size)) == size, "size \(size) does not read back")
        }
        // The config's IP syntax and the resolver's parser must agree on what an address is.
        require(ConfigSyntax.isIPv4(line) == (IPAddress(ipv4: line) != nil), "IPv4 grammars differ on \(line)")
        require(ConfigSyntax.isIPv6(line) == (IPAddress(ipv6: line) != nil), "IPv6 grammars differ on \(line)")
        if let host = ConfigSyntax.hostName(line) {
            require(HostName.validate(host) == .success(host), "config host name \(host.debugDescription) invalid")
        }
        if case .success(let address) = FleetRedisAddress.parse(line) { checkRedisAddress(address) }
        if let user = FleetUser.parse(line) {
            require(FleetUser.parse(user.description) == user, "ShareCookiesOf= user \(user) does not read back")
            require(user.jarName.utf8.count <= FleetCookieChange.maximumJarLength, "jar name over its cap")
        }
    }
}
