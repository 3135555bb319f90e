import HTTPDNSProtocol

extension DaemonConfiguration {
    /// Parses `httpdnsd.conf` text. `path` is only used in diagnostics.
    ///
    /// Semantics are systemd's: list keys (`Upstream=`, `Prefetch=`, `Static=`, `Route=`, `DomainTTL=`,
    /// `RankPorts=`, `ShareCookiesOf=`)
    /// accumulate and an empty assignment resets the list; for scalar keys the last assignment wins and an empty one
    /// restores the default. Unlike systemd's unit files, unknown sections and keys and lines
    /// without `=` are errors (as nginx refuses unknown directives): a typo must not start the
    /// daemon on a default it was meant to change. Every problem of the file is reported, each
    /// naming file, line and key, with a did-you-mean where a known name is close.
    public static func parse(
        text: String,
        path: String
    ) -> Result<(DaemonConfiguration, [ConfigWarning]), ConfigProblems> {
        var parser = ConfigurationParser(path: path)
        let configuration = parser.parse(text)
        guard parser.errors.isEmpty else { return .failure(ConfigProblems(parser.errors)) }
        return .success((configuration, parser.warnings))
    }
}

/// The state of one parse: the configuration so far, warnings, and what later checks need.
struct ConfigurationParser {
    /// The keys of each section, for "unknown key" warnings and case-mismatch hints.
    static let knownKeys: [String: [String]] = [
        "Resolver": [
            "DomainTTL", "RankPorts",
            "Upstream", "SecretKey", "SecretKeyFile", "AlibabaAPI", "AlibabaAESKey", "AlibabaAESKeyFile",
            "AlibabaEncryption", "Timeout", "ServeStale", "MinTTL", "MaxTTL",
            "MaxStale",
            "NegativeTTL", "CacheSize", "Prefetch", "CAFile", "TLSName", "Static", "DoHMethod", "MaxUpstreamQueries",
            "MaxUpstreamQueriesPerUser", "UpstreamQueryRatePerUser", "UpstreamQueryBurstPerUser", "Route",
            "DefaultRoute", "OnNetworkChange", "AlibabaRegion", "AlibabaBootAddresses", "SchedulerRefresh",
            "TencentBackupAddresses", "TencentAuthId", "TencentEncryption", "TencentKey", "TencentKeyFile",
            "TencentToken", "TencentTokenFile", "ClientIP", "SDNS",
        ],
        "Cookies": ["MaxPerDomain", "MaxTotal"],
        "Server": [
            "MaxLineLength", "MaxConnections", "MaxConnectionsPerUser", "MaxRequestsInFlight",
            "MaxRequestsInFlightPerUser", "MaxBatch", "IdleExit", "IdleTimeout", "LineTimeout", "Socket", "LogLevel",
            "HostsMapSize",
        ],
        "Store": ["ResetOnCorruption", "Synchronous"],
        "Fleet": ["Redis", "PasswordFile", "Name", "KeyFile", "ShareCache", "ShareCookiesOf"],
    ]

    /// `sun_path` holds 108 bytes including the terminating NUL (unix(7)).
    static let maximumSocketPathBytes = 107

    let path: String
    private(set) var warnings: [ConfigWarning] = []
    /// Every problem found, in file order once `parse` returns.
    private(set) var errors: [ConfigError] = []
    private var configuration = DaemonConfiguration()
    /// Line of the last assignment of each "Section.Key", for errors about combinations.
    private var lastLine: [String: Int] = [:]
    /// The built-in `Upstream=system` is replaced by the first `Upstream=` line, not appended to.
    private var upstreamsAssigned = false
    /// `[Fleet]` settings as they are read; checked for completeness at the end.
    private var fleet = FleetDraft()
    /// `Route=` lines as read, with their line: upstream names are known only at the end.
    private var routes: [(route: UpstreamRoute, line: Int)] = []
    /// `DefaultRoute=` as read, with its line.
    private var defaultRoute: (upstreams: [String], line: Int)?
    /// `ClientIP=` and `SDNS=` lines by upstream name, applied once the upstreams are named.
    private var clientIPs: [(upstream: String, address: String, line: Int)] = []
    private var sdnsLines: [(upstream: String, parameters: [SDNSParameter], line: Int)] = []
    /// Whether `AlibabaEncryption=` names a cipher (an empty assignment is the default's).
    private var alibabaEncryptionNamed = false
    /// `DomainTTL=` lines as read, with their line: checked against `MinTTL=`/`MaxTTL=` at the end.
    private var domainTTLs: [(domainTTL: DomainTTL, line: Int)] = []

    init(path: String) {
        self.path = path
    }

    mutating func parse(_ text: String) -> DaemonConfiguration {
        let read = INIReader.read(text)
        for problem in read.problems { errors.append(lineProblem(problem)) }
        for item in read.items {
            switch item {
            case .section(let header):
                if Self.knownKeys[header.name] == nil {
                    var message = "unknown section [\(header.name)]"
                    if let match = NameSuggestion.closest(to: header.name, among: Array(Self.knownKeys.keys)) {
                        message += " (did you mean [\(match)]?)"
                    }
                    errors.append(
                        ConfigError(code: .unknownSection, path: path, line: header.line, key: nil, message: message))
                }
                if header.name == "Fleet", fleet.headerLine == nil { fleet.headerLine = header.line }
            case .assignment(let assignment):
                do throws(ConfigError) {
                    try apply(assignment)
                } catch {
                    errors.append(error)
                }
            }
        }
        finish()
        // Stable: file order, as a reader expects.
        errors.sort { $0.line < $1.line }
        warnings.sort { $0.line < $1.line }
        return configuration
    }

    /// A line the reader could not take as a header or an assignment, with the key it most
    /// likely meant (`Upstream system` is `Upstream=system` without its `=`). The line's value is
    /// never repeated: it may be a secret.
    private func lineProblem(_ problem: INIReader.LineProblem) -> ConfigError {
        var message = problem.message
        if problem.kind == .missingEquals, let section = problem.section, let keys = Self.knownKeys[section],
            let word = problem.firstWord,
            let match = keys.first(where: { $0.lowercased() == word.lowercased() })
                ?? NameSuggestion.closest(to: word, among: keys)
        {
            message += " (did you mean \(match)=...?)"
        }
        return ConfigError(code: .syntax, path: path, line: problem.line, key: nil, message: message)
    }

    // MARK: - Assignments

    private mutating func apply(_ assignment: INIReader.Assignment) throws(ConfigError) {
        guard let keys = Self.knownKeys[assignment.section] else { return }  // reported at the header
        guard keys.contains(assignment.key) else { throw unknownKey(assignment, keys: keys) }
        lastLine["\(assignment.section).\(assignment.key)"] = assignment.line
        switch assignment.section {
        case "Resolver": try applyResolver(assignment)
        case "Cookies": try applyCookies(assignment)
        case "Server": try applyServer(assignment)
        case "Store": try applyStore(assignment)
        case "Fleet": try applyFleet(assignment)
        default: break
        }
    }

    /// A key its section does not have, with the known key it most likely meant: the same name
    /// in another case, a close spelling, or the same key in the section it belongs to.
    private func unknownKey(_ assignment: INIReader.Assignment, keys: [String]) -> ConfigError {
        var message = "unknown key \(assignment.key)= in [\(assignment.section)]"
        if let match = keys.first(where: { $0.lowercased() == assignment.key.lowercased() })
            ?? NameSuggestion.closest(to: assignment.key, among: keys)
        {
            message += " (did you mean \(match)=?)"
        } else if let home = Self.knownKeys.first(where: { $0.value.contains(assignment.key) })?.key {
            message += " (\(assignment.key)= belongs in [\(home)])"
        }
        return ConfigError(code: .unknownKey, path: path, line: assignment.line, key: nil, message: message)
    }

    private mutating func applyResolver(_ assignment: INIReader.Assignment) throws(ConfigError) {
        let defaults = DaemonConfiguration.Resolver()
        let value = assignment.value
        switch assignment.key {
        case "DomainTTL":
            if value.isEmpty {
                domainTTLs = []
            } else {
                domainTTLs.append((try domainTTL(assignment), assignment.line))
            }
        case "RankPorts":
            if value.isEmpty { configuration.resolver.rankPorts = [] }
            for word in value.split(whereSeparator: \.isWhitespace) {
                let rank = try rankPort(String(word), assignment)
                if let first = configuration.resolver.rankPorts.first(where: { $0.host == rank.host }) {
                    guard first.port == rank.port else {
                        throw error(assignment, "\(rank.host) is ranked on two ports (\(first.port) and \(rank.port))")
                    }
                } else {
                    configuration.resolver.rankPorts.append(rank)
                }
            }
        case "Upstream":
            if !upstreamsAssigned {
                configuration.resolver.upstreams = []
                upstreamsAssigned = true
            }
            if value.isEmpty {
                configuration.resolver.upstreams = []
            } else {
                configuration.resolver.upstreams.append(try upstream(assignment))
            }
        case "SecretKey":
            if value.isEmpty {
                configuration.resolver.secretKey = nil
            } else {
                // The value is never repeated in the message: it is a secret.
                guard !ConfigSyntax.hasWhitespaceOrControl(value) else {
                    throw error(assignment, "invalid secret key (it contains whitespace or control characters)")
                }
                configuration.resolver.secretKey = ConfigSecret(value)
            }
        case "SecretKeyFile":
            configuration.resolver.secretKeyFile = try absolutePath(assignment)
        case "AlibabaAPI":
            guard let api = value.isEmpty ? .v1 : AlibabaAPI(rawValue: value.lowercased()) else {
                throw error(assignment, "expected v1 or v2, not \"\(value)\"")
            }
            configuration.resolver.alibabaAPI = api
        case "AlibabaAESKey":
            configuration.resolver.alibabaAESKey = try secret(assignment, what: "AES key")
        case "AlibabaAESKeyFile":
            configuration.resolver.alibabaAESKeyFile = try absolutePath(assignment)
        case "AlibabaEncryption":
            guard let encryption = value.isEmpty ? .gcm : AlibabaEncryption(rawValue: value.lowercased()) else {
                throw error(assignment, "expected cbc or gcm, not \"\(value)\"")
            }
            configuration.resolver.alibabaEncryption = encryption
            alibabaEncryptionNamed = !value.isEmpty
        case "CAFile":
            configuration.resolver.caFile = try absolutePath(assignment)
        case "Timeout":
            configuration.resolver.timeoutMs = try timeSpan(assignment, default: defaults.timeoutMs, allowZero: false)
        case "ServeStale":
            configuration.resolver.serveStale = try boolean(assignment, default: defaults.serveStale)
        case "MinTTL":
            configuration.resolver.minTTLMs = try timeSpan(assignment, default: defaults.minTTLMs)
        case "MaxTTL":
            configuration.resolver.maxTTLMs = try timeSpan(
                assignment, default: defaults.maxTTLMs, infinity: .max)
        case "MaxStale":
            configuration.resolver.maxStaleMs = try timeSpan(
                assignment, default: defaults.maxStaleMs, infinity: .max)
        case "NegativeTTL":
            configuration.resolver.negativeTTLMs = try timeSpan(assignment, default: defaults.negativeTTLMs)
        case "CacheSize":
            configuration.resolver.cacheSize = try count(assignment, default: defaults.cacheSize)
        case "MaxUpstreamQueries":
            configuration.resolver.maxUpstreamQueries = try count(assignment, default: defaults.maxUpstreamQueries)
        case "MaxUpstreamQueriesPerUser":
            configuration.resolver.maxUpstreamQueriesPerUser = try count(
                assignment, default: defaults.maxUpstreamQueriesPerUser)
        case "UpstreamQueryRatePerUser":
            configuration.resolver.upstreamQueryRatePerUser = try count(
                assignment, default: defaults.upstreamQueryRatePerUser)
        case "UpstreamQueryBurstPerUser":
            configuration.resolver.upstreamQueryBurstPerUser = try count(
                assignment, default: defaults.upstreamQueryBurstPerUser)
        case "Prefetch":
            if value.isEmpty {
                configuration.resolver.prefetch = []
            }
            for word in value.split(whereSeparator: \.isWhitespace) {
                let host = try hostName(String(word), assignment)
                if !configuration.resolver.prefetch.contains(host) { configuration.resolver.prefetch.append(host) }
            }
        case "TLSName":
            configuration.resolver.tlsName = value.isEmpty ? nil : try hostName(value, assignment)
        case "DoHMethod":
            switch value.uppercased() {
            case "", "GET": configuration.resolver.dohPost = false
            case "POST": configuration.resolver.dohPost = true
            default: throw error(assignment, "expected GET or POST, not \"\(value)\"")
            }
        case "Static":
            if value.isEmpty {
                configuration.resolver.staticAnswers = []
            } else {
                configuration.resolver.staticAnswers.append(try staticAnswer(assignment))
            }
        case "Route":
            if value.isEmpty {
                routes = []
            } else {
                routes.append((try route(assignment), assignment.line))
            }
        case "ClientIP":
            if value.isEmpty {
                clientIPs = []
            } else {
                clientIPs.append(try clientIP(assignment))
            }
        case "SDNS":
            if value.isEmpty {
                sdnsLines = []
            } else {
                sdnsLines.append(try sdns(assignment))
            }
        case "DefaultRoute":
            defaultRoute = value.isEmpty ? nil : (try upstreamNames(value, assignment), assignment.line)
        case "OnNetworkChange":
            configuration.resolver.onNetworkChange = try networkChangePolicy(assignment)
        case "AlibabaRegion":
            guard value.isEmpty || AlibabaScheduler.regions.contains(value.lowercased()) else {
                throw error(
                    assignment,
                    "unknown region \"\(value)\" (expected one of \(AlibabaScheduler.regions.joined(separator: ", ")))")
            }
            configuration.resolver.alibabaRegion = value.isEmpty ? nil : value.lowercased()
        case "AlibabaBootAddresses":
            let addresses = try serviceAddresses(assignment, after: configuration.resolver.alibabaBootAddresses ?? [])
            configuration.resolver.alibabaBootAddresses = value.isEmpty ? nil : addresses
        case "SchedulerRefresh":
            configuration.resolver.schedulerRefreshMs = try timeSpan(
                assignment, default: defaults.schedulerRefreshMs, allowZero: false)
        case "TencentBackupAddresses":
            configuration.resolver.tencentBackupAddresses = try serviceAddresses(
                assignment, after: value.isEmpty ? [] : configuration.resolver.tencentBackupAddresses)
        case "TencentAuthId":
            guard value.isEmpty || !ConfigSyntax.hasWhitespaceOrControl(value) else {
                throw error(assignment, "invalid authId (it contains whitespace or control characters)")
            }
            configuration.resolver.tencent.authID = value.isEmpty ? nil : value
        case "TencentEncryption":
            guard let encryption = value.isEmpty ? .des : TencentEncryption(rawValue: value.lowercased()) else {
                throw error(assignment, "expected des or aes, not \"\(value)\"")
            }
            configuration.resolver.tencent.encryption = encryption
        case "TencentKey":
            configuration.resolver.tencent.key = try secret(assignment, what: "key")
        case "TencentKeyFile":
            configuration.resolver.tencent.keyFile = try absolutePath(assignment)
        case "TencentToken":
            configuration.resolver.tencent.token = try secret(assignment, what: "token")
        case "TencentTokenFile":
            configuration.resolver.tencent.tokenFile = try absolutePath(assignment)
        default:
            break
        }
    }

    /// `ClientIP=UPSTREAM ADDRESS`.
    private func clientIP(_ assignment: INIReader.Assignment) throws(ConfigError) -> (
        upstream: String, address: String, line: Int
    ) {
        let words = assignment.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.count == 2 else { throw error(assignment, "expected UPSTREAM ADDRESS") }
        guard let address = IPAddress(words[1]) else {
            throw error(assignment, "invalid IP address \"\(words[1])\"")
        }
        return (words[0], address.description, assignment.line)
    }

    /// `SDNS=UPSTREAM KEY=VALUE [KEY=VALUE...]`, checked as Alibaba's SDKs check them.
    private func sdns(_ assignment: INIReader.Assignment) throws(ConfigError) -> (
        upstream: String, parameters: [SDNSParameter], line: Int
    ) {
        let words = assignment.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.count >= 2 else { throw error(assignment, "expected UPSTREAM KEY=VALUE...") }
        var parameters: [SDNSParameter] = []
        for word in words.dropFirst() {
            guard let equals = word.firstIndex(of: "=") else {
                throw error(assignment, "expected KEY=VALUE, not \"\(word)\"")
            }
            let key = String(word[..<equals])
            let value = String(word[word.index(after: equals)...])
            guard SDNSParameter.isValidKey(key) else {
                throw error(assignment, "invalid SDNS key \"\(key)\" (letters, digits, - and _)")
            }
            guard SDNSParameter.isValidValue(value) else {
                throw error(assignment, "invalid SDNS value for \"\(key)\" (letters, digits, -, _ and =)")
            }
            guard !parameters.contains(where: { $0.key == key }) else {
                throw error(assignment, "SDNS key \"\(key)\" is given twice")
            }
            parameters.append(SDNSParameter(key: key, value: value))
        }
        return (words[0], parameters, assignment.line)
    }

    /// A secret written in the file (empty: none). The value is never repeated in a message.
    private func secret(_ assignment: INIReader.Assignment, what: String) throws(ConfigError) -> ConfigSecret? {
        if assignment.value.isEmpty { return nil }
        guard !ConfigSyntax.hasWhitespaceOrControl(assignment.value) else {
            throw error(assignment, "invalid \(what) (it contains whitespace or control characters)")
        }
        return ConfigSecret(assignment.value)
    }

    /// `refresh`, `flush` or `ignore` (empty: the default), with the one most likely meant.
    private func networkChangePolicy(_ assignment: INIReader.Assignment) throws(ConfigError) -> NetworkChangePolicy {
        if assignment.value.isEmpty { return DaemonConfiguration.Resolver().onNetworkChange }
        if let policy = NetworkChangePolicy(rawValue: assignment.value) { return policy }
        let names = NetworkChangePolicy.allCases.map(\.rawValue)
        var message = "expected refresh, flush or ignore, not \"\(assignment.value)\""
        if let match = names.first(where: { $0 == assignment.value.lowercased() })
            ?? NameSuggestion.closest(to: assignment.value, among: names)
        {
            message += " (did you mean \(match)?)"
        }
        throw error(assignment, message)
    }

    private mutating func applyCookies(_ assignment: INIReader.Assignment) throws(ConfigError) {
        let defaults = DaemonConfiguration.Cookies()
        switch assignment.key {
        case "MaxPerDomain":
            configuration.cookies.maxPerDomain = try count(assignment, default: defaults.maxPerDomain)
        case "MaxTotal":
            configuration.cookies.maxTotal = try count(assignment, default: defaults.maxTotal)
        default:
            break
        }
    }

    private mutating func applyServer(_ assignment: INIReader.Assignment) throws(ConfigError) {
        let defaults = DaemonConfiguration.Server()
        switch assignment.key {
        case "MaxLineLength":
            configuration.server.maxLineLength = try size(assignment, default: defaults.maxLineLength)
        case "MaxConnections":
            configuration.server.maxConnections = try count(assignment, default: defaults.maxConnections)
        case "MaxConnectionsPerUser":
            configuration.server.maxConnectionsPerUser = try count(
                assignment, default: defaults.maxConnectionsPerUser)
        case "MaxRequestsInFlight":
            configuration.server.maxRequestsInFlight = try count(assignment, default: defaults.maxRequestsInFlight)
        case "MaxRequestsInFlightPerUser":
            configuration.server.maxRequestsInFlightPerUser = try count(
                assignment, default: defaults.maxRequestsInFlightPerUser)
        case "IdleTimeout":
            configuration.server.idleTimeoutMs = try timeSpan(
                assignment, default: defaults.idleTimeoutMs, infinity: 0)
        case "LineTimeout":
            configuration.server.lineTimeoutMs = try timeSpan(
                assignment, default: defaults.lineTimeoutMs, infinity: 0)
        case "MaxBatch":
            configuration.server.maxBatch = try count(assignment, default: defaults.maxBatch)
        case "IdleExit":
            configuration.server.idleExitMs = try timeSpan(assignment, default: defaults.idleExitMs, infinity: 0)
        case "HostsMapSize":
            configuration.server.hostsMapSlots = try hostsMapSlots(assignment, default: defaults.hostsMapSlots)
        case "Socket":
            let socket = try absolutePath(assignment)
            if let socket, socket.utf8.count > Self.maximumSocketPathBytes {
                throw error(assignment, "socket path is longer than \(Self.maximumSocketPathBytes) bytes")
            }
            configuration.server.socket = socket
        case "LogLevel":
            if assignment.value.isEmpty {
                configuration.server.logLevel = defaults.logLevel
            } else {
                guard let level = LogPriority(name: assignment.value) else {
                    let names = LogPriority.allCases.map(\.name).joined(separator: ", ")
                    throw error(assignment, "unknown log level \"\(assignment.value)\" (expected one of \(names))")
                }
                configuration.server.logLevel = level
            }
        default:
            break
        }
    }

    private mutating func applyStore(_ assignment: INIReader.Assignment) throws(ConfigError) {
        switch assignment.key {
        case "ResetOnCorruption":
            configuration.store.resetOnCorruption = try boolean(
                assignment, default: DaemonConfiguration.Store().resetOnCorruption)
        case "Synchronous":
            switch assignment.value.lowercased() {
            case "", "normal": configuration.store.synchronousFull = false
            case "full": configuration.store.synchronousFull = true
            default: throw error(assignment, "expected normal or full, not \"\(assignment.value)\"")
            }
        default:
            break
        }
    }

    private mutating func applyFleet(_ assignment: INIReader.Assignment) throws(ConfigError) {
        let value = assignment.value
        switch assignment.key {
        case "Redis":
            if value.isEmpty {
                fleet.redis = nil
            } else {
                switch FleetRedisAddress.parse(value) {
                case .success(let address): fleet.redis = address
                case .failure(let problem): throw error(assignment, problem.description)
                }
            }
        case "PasswordFile":
            fleet.passwordFile = try absolutePath(assignment)
        case "Name":
            guard value.isEmpty || FleetConfiguration.isValidName(value) else {
                throw error(
                    assignment,
                    "invalid fleet name \"\(value)\" (1 to \(FleetConfiguration.maximumNameLength) letters, digits, "
                        + "'.', '_' or '-')")
            }
            fleet.name = value.isEmpty ? nil : value
        case "KeyFile":
            fleet.keyFile = try absolutePath(assignment)
        case "ShareCache":
            fleet.shareCache = try boolean(assignment, default: true)
        case "ShareCookiesOf":
            if value.isEmpty { fleet.shareCookiesOf = [] }
            for word in value.split(whereSeparator: \.isWhitespace) {
                guard let user = FleetUser.parse(String(word)) else {
                    throw error(assignment, "invalid user \"\(word)\" (a user name or a numeric uid)")
                }
                if !fleet.shareCookiesOf.contains(user) { fleet.shareCookiesOf.append(user) }
            }
        default:
            break
        }
    }

    // MARK: - Whole-file checks

    private mutating func finish() {
        configuration.fleet = finishFleet()
        let resolver = configuration.resolver
        if resolver.minTTLMs > resolver.maxTTLMs {
            let minLine = lastLine["Resolver.MinTTL"] ?? 0
            let maxLine = lastLine["Resolver.MaxTTL"] ?? 0
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: max(minLine, maxLine),
                    key: minLine >= maxLine ? "MinTTL" : "MaxTTL",
                    message: "MinTTL= is greater than MaxTTL="))
        }
        if resolver.upstreams.isEmpty {
            warn(
                lastLine["Resolver.Upstream"] ?? 0, "no upstream left after Upstream= reset, using the system resolver")
            configuration.resolver.upstreams = [.system]
        }
        if resolver.secretKey != nil, resolver.secretKeyFile != nil {
            let line = max(lastLine["Resolver.SecretKey"] ?? 0, lastLine["Resolver.SecretKeyFile"] ?? 0)
            warn(line, "both SecretKey= and SecretKeyFile= are set, SecretKeyFile= wins")
        }
        var seen: [UpstreamEndpoint.Kind: Int] = [:]
        for index in configuration.resolver.upstreams.indices {
            let kind = configuration.resolver.upstreams[index].kind
            let occurrence = (seen[kind] ?? 0) + 1
            seen[kind] = occurrence
            configuration.resolver.upstreams[index].name =
                occurrence == 1 ? kind.rawValue : "\(kind.rawValue)#\(occurrence)"
        }
        finishUpstreamForms()
        finishTencentAccount()
        finishAlibabaV2()
        refuseUnaskableUpstreams()
        finishRoutes()
        finishQueryParameters()
        warnOfBilledDefault()
        finishDomainTTLs()
        finishServiceAddresses()
    }

    /// Gives each upstream the form the whole file's settings make it asked in.
    private mutating func finishUpstreamForms() {
        let resolver = configuration.resolver
        for index in resolver.upstreams.indices {
            let upstream = resolver.upstreams[index]
            configuration.resolver.upstreams[index] = upstream.descriptor.configured(upstream, by: resolver)
        }
    }

    /// Refuses each upstream that cannot be asked in its form (its descriptor says why).
    private mutating func refuseUnaskableUpstreams() {
        for upstream in configuration.resolver.upstreams {
            guard let problem = upstream.descriptor.configurationProblem(upstream) else { continue }
            errors.append(
                ConfigError(
                    code: .conflict, path: path,
                    line: lastLine["Resolver.Upstream"] ?? lastLine["Resolver.AlibabaAPI"] ?? 0, key: "Upstream",
                    message: "\(upstream.name): \(problem)"))
        }
    }

    /// Checks the Tencent account's keys: a key written here has its cipher's length, a key
    /// needs an authId, and a credential no upstream can use is pointless.
    private mutating func finishTencentAccount() {
        let account = configuration.resolver.tencent
        let keyLine = max(lastLine["Resolver.TencentKey"] ?? 0, lastLine["Resolver.TencentKeyFile"] ?? 0)
        if let key = account.key, account.keyFile == nil,
            let problem = account.encryption.keyLengthProblem(key.revealed.utf8.count)
        {
            let line = max(keyLine, lastLine["Resolver.TencentEncryption"] ?? 0)
            errors.append(ConfigError(code: .conflict, path: path, line: line, key: "TencentKey", message: problem))
        }
        if account.key != nil || account.keyFile != nil, account.authID == nil {
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: keyLine,
                    key: account.keyFile != nil ? "TencentKeyFile" : "TencentKey",
                    message: "the encrypted form needs TencentAuthId= (the id sent with the key's names)"))
        }
        let forms = configuration.resolver.upstreams.map(\.tencentForm)
        if account.hasKey, !forms.contains(.des), !forms.contains(.aes) {
            warn(keyLine, "TencentKey= is set but no tencent upstream has an http:// URL (the encrypted form's)")
        }
        if account.hasToken, !forms.contains(.token) {
            let line = max(lastLine["Resolver.TencentToken"] ?? 0, lastLine["Resolver.TencentTokenFile"] ?? 0)
            warn(line, "TencentToken= is set but no tencent upstream has an https:// URL (the token form's)")
        }
    }

    /// `AlibabaAPI=v2` signs every query: it needs a secret, and one written here must be
    /// hexadecimal (v2 signs with its bytes). Its AES key is v2's alone and, written here, 16
    /// bytes in hexadecimal. Each `alibaba` URL naming the account id (sent as `id=`) is its
    /// descriptor's check.
    private mutating func finishAlibabaV2() {
        let resolver = configuration.resolver
        let keyLine = max(lastLine["Resolver.AlibabaAESKey"] ?? 0, lastLine["Resolver.AlibabaAESKeyFile"] ?? 0)
        let keyName = resolver.alibabaAESKeyFile != nil ? "AlibabaAESKeyFile" : "AlibabaAESKey"
        if resolver.alibabaAESKey != nil, resolver.alibabaAESKeyFile != nil {
            warn(keyLine, "both AlibabaAESKey= and AlibabaAESKeyFile= are set, AlibabaAESKeyFile= wins")
        }
        if resolver.hasAlibabaAESKey, resolver.alibabaAPI != .v2 {
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: keyLine, key: keyName,
                    message: "the AES key encrypts v2's parameters: set AlibabaAPI=v2"))
        }
        if resolver.alibabaAESKeyFile == nil, let key = resolver.alibabaAESKey,
            let problem = AlibabaV2.encryptionKeyProblem(key.revealed)
        {
            errors.append(ConfigError(code: .conflict, path: path, line: keyLine, key: keyName, message: problem))
        }
        if alibabaEncryptionNamed, !resolver.hasAlibabaAESKey {
            warn(
                lastLine["Resolver.AlibabaEncryption"] ?? 0,
                "AlibabaEncryption= is set but no AlibabaAESKey=: v2 queries are sent in clear (m=0)")
        }
        guard resolver.alibabaAPI == .v2 else { return }
        let apiLine = lastLine["Resolver.AlibabaAPI"] ?? 0
        if resolver.secretKey == nil, resolver.secretKeyFile == nil {
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: apiLine, key: "AlibabaAPI",
                    message: "v2 signs every query: set SecretKey= or SecretKeyFile="))
        } else if resolver.secretKeyFile == nil, let secret = resolver.secretKey,
            AlibabaV2.signingKey(secret.revealed) == nil
        {
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: max(apiLine, lastLine["Resolver.SecretKey"] ?? 0),
                    key: "SecretKey", message: "v2 signs with the secret's bytes: it must be hexadecimal"))
        }
    }

    /// Checks `DomainTTL=` lines: each domain listed once, and each line's floor (its own or
    /// `MinTTL=`) at most its ceiling (its own or `MaxTTL=`).
    private mutating func finishDomainTTLs() {
        let resolver = configuration.resolver
        for (domainTTL, line) in domainTTLs {
            let floor = domainTTL.minTTLMs ?? resolver.minTTLMs
            let ceiling = domainTTL.maxTTLMs ?? resolver.maxTTLMs
            if floor > ceiling {
                let message =
                    switch (domainTTL.minTTLMs, domainTTL.maxTTLMs) {
                    case (nil, _): "MinTTL= is greater than this line's MAX"
                    case (_, nil): "MIN is greater than MaxTTL="
                    default: "MIN is greater than MAX"
                    }
                errors.append(ConfigError(code: .conflict, path: path, line: line, key: "DomainTTL", message: message))
            }
        }
        refuseRepeatedDomains(domainTTLs.map { ($0.domainTTL.domains, $0.line) }, key: "DomainTTL") { domain, first in
            "\(domain) has TTL bounds twice (first on line \(first))"
        }
        configuration.resolver.domainTTLs = domainTTLs.map { $0.domainTTL }
    }

    /// `AlibabaBootAddresses=` needs `AlibabaRegion=`; the region and the backups are pointless
    /// without an upstream of their kind (a warning).
    private mutating func finishServiceAddresses() {
        let resolver = configuration.resolver
        let sources = Set(resolver.upstreams.map(\.descriptor.serviceAddresses))
        if resolver.alibabaBootAddresses != nil, resolver.alibabaRegion == nil {
            errors.append(
                ConfigError(
                    code: .conflict, path: path, line: lastLine["Resolver.AlibabaBootAddresses"] ?? 0,
                    key: "AlibabaBootAddresses",
                    message: "AlibabaBootAddresses= needs AlibabaRegion= (the region the scheduler is asked for)"))
        }
        if resolver.alibabaRegion != nil, !sources.contains(.scheduler) {
            warn(lastLine["Resolver.AlibabaRegion"] ?? 0, "AlibabaRegion= is set but no upstream is alibaba")
        }
        if !resolver.tencentBackupAddresses.isEmpty, !sources.contains(.backups) {
            warn(
                lastLine["Resolver.TencentBackupAddresses"] ?? 0,
                "TencentBackupAddresses= is set but no upstream is tencent")
        }
    }

    /// Checks `Route=` and `DefaultRoute=` against the upstreams' names (each name must be an
    /// upstream's, or `system`; each domain routed once), adds the system resolver to the
    /// upstreams when a route names it without an `Upstream=system` line (once any route is set,
    /// names outside every route go to it by default), and warns of upstreams no route uses.
    private mutating func finishRoutes() {
        guard !routes.isEmpty || defaultRoute != nil else { return }
        let names = configuration.resolver.upstreams.map(\.name)
        let known = names.contains(UpstreamEndpoint.system.name) ? names : names + [UpstreamEndpoint.system.name]
        var used: Set<String> = []
        var lists = routes.map { ($0.route.upstreams, $0.line, "Route") }
        if let defaultRoute {
            lists.append((defaultRoute.upstreams, defaultRoute.line, "DefaultRoute"))
        } else if !routes.isEmpty {
            used.insert(UpstreamEndpoint.system.name)
        }
        for (list, line, key) in lists {
            for name in list {
                used.insert(name)
                guard !known.contains(name) else { continue }
                refuseUnknownUpstream(name, among: known, line: line, key: key)
            }
        }
        refuseRepeatedDomains(routes.map { ($0.route.domains, $0.line) }, key: "Route") { domain, first in
            "\(domain) is routed twice (first on line \(first))"
        }
        if used.contains(UpstreamEndpoint.system.name), !names.contains(UpstreamEndpoint.system.name) {
            configuration.resolver.upstreams.append(.system)
        }
        configuration.resolver.routes = routes.map(\.route)
        configuration.resolver.defaultRoute = defaultRoute?.upstreams
        let line = max(lastLine["Resolver.Route"] ?? 0, lastLine["Resolver.DefaultRoute"] ?? 0)
        for name in names where !used.contains(name) {
            warn(line, "upstream \(name) is in no Route= and not in DefaultRoute=: it is never asked")
        }
    }

    /// A `key=` line at `line` names `name`, which no upstream is: the error lists them and
    /// suggests the closest.
    private mutating func refuseUnknownUpstream(_ name: String, among known: [String], line: Int, key: String) {
        var message = "no upstream is named \"\(name)\" (the upstreams: \(known.joined(separator: ", ")))"
        if let match = NameSuggestion.closest(to: name, among: known) { message += " (did you mean \(match)?)" }
        errors.append(ConfigError(path: path, line: line, key: key, message: message))
    }

    /// Gives each upstream named by `ClientIP=` and `SDNS=` lines those parameters; an upstream
    /// whose kind cannot carry them, or one named twice, is refused.
    private mutating func finishQueryParameters() {
        let upstreams = configuration.resolver.upstreams
        /// The upstream a line gives parameters to, and whether it was refused (its kind takes
        /// none, or it was given them already); nil when no upstream has the name.
        func target(
            _ name: String, line: Int, key: String, seen: inout Set<String>,
            takes: (any UpstreamKindDescriptor) -> Bool, refusal: String, repeated: String
        ) -> (index: Int, refused: Bool)? {
            guard let index = upstreams.firstIndex(where: { $0.name == name }) else {
                refuseUnknownUpstream(name, among: upstreams.map(\.name), line: line, key: key)
                return nil
            }
            if !takes(upstreams[index].descriptor) {
                conflict(line, key, refusal)
                return (index, true)
            }
            if !seen.insert(name).inserted {
                conflict(line, key, repeated)
                return (index, true)
            }
            return (index, false)
        }
        var seen: Set<String> = []
        for (name, address, line) in clientIPs {
            guard
                let (index, _) = target(
                    name, line: line, key: "ClientIP", seen: &seen, takes: \.takesClientIP,
                    refusal: "\(name) takes no client address (only alibaba and tencent upstreams do)",
                    repeated: "\(name) has a client address already")
            else { continue }
            configuration.resolver.upstreams[index].parameters.clientIP = address
        }
        seen = []
        for (name, parameters, line) in sdnsLines {
            guard
                let (index, refused) = target(
                    name, line: line, key: "SDNS", seen: &seen, takes: \.takesSDNS,
                    refusal: "\(name) takes no SDNS parameters (only alibaba upstreams do)",
                    repeated: "\(name) has SDNS parameters already (give them all on one line)")
            else { continue }
            if !refused, parameters.map({ "&\($0.name)=\($0.value)" }).joined().utf8.count > SDNSParameter.maxQueryBytes
            {
                conflict(line, "SDNS", "the SDNS parameters are over \(SDNSParameter.maxQueryBytes) bytes")
            }
            configuration.resolver.upstreams[index].parameters.sdns = parameters
        }
    }

    private mutating func conflict(_ line: Int, _ key: String, _ message: String) {
        errors.append(ConfigError(code: .conflict, path: path, line: line, key: key, message: message))
    }

    /// Warns when every name outside the routes would go to billed services only: each such
    /// query is billed, and their empty answer for a name outside their console is final (the
    /// NSS module leaves such names to the machine's resolver; RPC callers get the services').
    private mutating func warnOfBilledDefault() {
        let resolver = configuration.resolver
        let routing = UpstreamRouting(
            upstreams: resolver.upstreams, routes: resolver.routes, defaultRoute: resolver.defaultRoute)
        let asked = routing.defaultUpstreams.map { resolver.upstreams[$0] }
        guard !asked.isEmpty, asked.allSatisfy(\.kind.isBilled) else { return }
        let line = lastLine["Resolver.DefaultRoute"] ?? lastLine["Resolver.Upstream"] ?? 0
        let names = asked.map(\.name).joined(separator: ", ")
        let scope = routing.isConfigured ? "every name outside the Route= domains" : "every name (no Route= is set)"
        warn(
            line,
            "\(scope) goes to the billed upstream(s) \(names): each query is billed, and a name outside the "
                + "account's console gets an empty answer; add Route= lines for the account's domains (programs "
                + "resolving through nss-httpdns get the machine's own resolver for the other names)")
    }

    /// Refuses each domain listed again on a later line of `key` (`Route=`, `DomainTTL=`), with
    /// `message(domain, firstLine)`.
    private mutating func refuseRepeatedDomains(
        _ lines: [(domains: [String], line: Int)], key: String, _ message: (String, Int) -> String
    ) {
        var firstLine: [String: Int] = [:]
        for (domains, line) in lines {
            for domain in domains {
                if let first = firstLine[domain] {
                    errors.append(
                        ConfigError(code: .conflict, path: path, line: line, key: key, message: message(domain, first)))
                } else {
                    firstLine[domain] = line
                }
            }
        }
    }

    /// A `[Fleet]` section needs `Redis=`, `Name=` and `KeyFile=`; without the section there is
    /// no fleet.
    private mutating func finishFleet() -> FleetConfiguration? {
        guard let headerLine = fleet.headerLine else { return nil }
        for (key, missing) in [
            ("Redis", fleet.redis == nil), ("Name", fleet.name == nil), ("KeyFile", fleet.keyFile == nil),
        ]
        where missing {
            errors.append(
                ConfigError(
                    path: path, line: lastLine["Fleet.\(key)"] ?? headerLine, key: key,
                    message: "the [Fleet] section needs \(key)="))
        }
        guard let redis = fleet.redis, let name = fleet.name, let keyFile = fleet.keyFile else { return nil }
        if !fleet.shareCache && fleet.shareCookiesOf.isEmpty {
            warn(
                lastLine["Fleet.ShareCache"] ?? headerLine,
                "the fleet shares nothing: ShareCache=no and no ShareCookiesOf= users")
        }
        return FleetConfiguration(
            redis: redis, passwordFile: fleet.passwordFile, name: name, keyFile: keyFile, shareCache: fleet.shareCache,
            shareCookiesOf: fleet.shareCookiesOf)
    }

    // MARK: - Value grammars

    private func upstream(_ assignment: INIReader.Assignment) throws(ConfigError) -> UpstreamEndpoint {
        let words = assignment.value.split(whereSeparator: \.isWhitespace).map(String.init)
        let kinds = UpstreamEndpoint.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let kind = UpstreamEndpoint.Kind(rawValue: words[0].lowercased()) else {
            throw error(assignment, "unknown upstream kind \"\(words[0])\" (expected one of \(kinds))")
        }
        guard kind.needsURL else {
            guard words.count == 1 else { throw error(assignment, "the system upstream takes no URL") }
            return UpstreamEndpoint(kind: kind, url: nil, name: kind.rawValue)
        }
        guard words.count == 2 else {
            throw error(
                assignment,
                words.count == 1 ? "upstream kind \(kind.rawValue) needs a URL" : "expected KIND URL, found extra words"
            )
        }
        if let problem = ConfigSyntax.httpURLProblem(words[1]) { throw error(assignment, problem) }
        return UpstreamEndpoint(kind: kind, url: words[1], name: kind.rawValue)
    }

    /// `UPSTREAM[,UPSTREAM...] DOMAIN...`; a domain may carry systemd-resolved's `~` (every
    /// routed domain is routing-only here).
    private func route(_ assignment: INIReader.Assignment) throws(ConfigError) -> UpstreamRoute {
        let words = assignment.value.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count >= 2 else { throw error(assignment, "expected UPSTREAM[,UPSTREAM...] DOMAIN [DOMAIN...]") }
        let upstreams = try upstreamNames(words[0], assignment)
        var domains: [String] = []
        for word in words.dropFirst() {
            let written = word.hasPrefix("~") ? String(word.dropFirst()) : word
            guard written != "." else {
                throw error(
                    assignment, "\"\(word)\" is every name: set DefaultRoute= for the names outside every route")
            }
            let domain = try hostName(written, assignment)
            if !domains.contains(domain) { domains.append(domain) }
        }
        return UpstreamRoute(domains: domains, upstreams: upstreams)
    }

    /// `MIN..MAX DOMAIN...`: time spans without spaces, either side empty for the global key's
    /// value (`..1h`), `infinity` for no ceiling; a domain may carry `~` as in `Route=`.
    private func domainTTL(_ assignment: INIReader.Assignment) throws(ConfigError) -> DomainTTL {
        let words = assignment.value.split(whereSeparator: \.isWhitespace).map(String.init)
        let usage = "expected MIN..MAX DOMAIN [DOMAIN...] (MIN or MAX may be empty: MinTTL=/MaxTTL=)"
        let bounds = words.first?.split(separator: "..", maxSplits: 1, omittingEmptySubsequences: false) ?? []
        guard words.count >= 2, bounds.count == 2 else { throw error(assignment, usage) }
        let (low, high) = (String(bounds[0]), String(bounds[1]))
        func span(_ text: String, infinity: Int?) throws(ConfigError) -> Int? {
            if text.isEmpty { return nil }
            if text == "infinity", let infinity { return infinity }
            guard let milliseconds = ConfigTimeSpan.milliseconds(text) else {
                throw error(assignment, "invalid time span \"\(text)\" in \"\(words[0])\"")
            }
            return milliseconds
        }
        let minTTLMs = try span(low, infinity: nil)
        let maxTTLMs = try span(high, infinity: .max)
        var domains: [String] = []
        for word in words.dropFirst() {
            let written = word.hasPrefix("~") ? String(word.dropFirst()) : word
            guard written != "." else {
                throw error(assignment, "\"\(word)\" is every name: set MinTTL= and MaxTTL= for every name")
            }
            let domain = try hostName(written, assignment)
            if !domains.contains(domain) { domains.append(domain) }
        }
        return DomainTTL(domains: domains, minTTLMs: minTTLMs, maxTTLMs: maxTTLMs)
    }

    /// `HOST:PORT`: a host name (not an address: an IP literal is answered as it is, never ranked)
    /// and a port from 1 to 65535.
    private func rankPort(_ word: String, _ assignment: INIReader.Assignment) throws(ConfigError) -> RankPort {
        guard let colon = word.lastIndex(of: ":") else {
            throw error(assignment, "expected HOST:PORT, not \"\(word)\"")
        }
        let (name, digits) = (String(word[..<colon]), word[word.index(after: colon)...])
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = UInt16(digits), port > 0
        else { throw error(assignment, "invalid port \"\(digits)\" in \"\(word)\" (expected 1 to 65535)") }
        guard !ConfigSyntax.isIPAddress(name) else {
            throw error(assignment, "\"\(name)\" is an address: resolve answers it as it is, there is nothing to rank")
        }
        return RankPort(host: try hostName(name, assignment), port: port)
    }

    /// `UPSTREAM[,UPSTREAM...]`: upstream names, each once, checked against the upstreams at the end.
    private func upstreamNames(_ value: String, _ assignment: INIReader.Assignment) throws(ConfigError) -> [String] {
        guard !value.contains(where: \.isWhitespace) else {
            throw error(assignment, "expected UPSTREAM[,UPSTREAM...] (names separated by commas, no spaces)")
        }
        var names: [String] = []
        for name in value.split(separator: ",", omittingEmptySubsequences: false).map({ $0.lowercased() }) {
            guard !name.isEmpty else { throw error(assignment, "an empty upstream name in \"\(value)\"") }
            guard !names.contains(name) else { throw error(assignment, "upstream \(name) is listed twice") }
            names.append(name)
        }
        return names
    }

    /// `IP [IP...]` added to `earlier`: service addresses, canonical, each once; an address no
    /// service can have (unspecified, multicast, broadcast) is refused.
    private func serviceAddresses(_ assignment: INIReader.Assignment, after earlier: [String]) throws(ConfigError)
        -> [String]
    {
        var addresses = earlier
        for word in assignment.value.split(whereSeparator: \.isWhitespace).map(String.init) {
            guard let address = IPAddress(word), ServiceAddressRules.isUsable(address) else {
                throw error(assignment, "invalid service address \"\(word)\" (expected an IP address)")
            }
            if !addresses.contains(address.description) { addresses.append(address.description) }
        }
        return addresses
    }

    private func staticAnswer(_ assignment: INIReader.Assignment) throws(ConfigError) -> StaticAnswer {
        let words = assignment.value.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count >= 2 else { throw error(assignment, "expected HOST IP [IP...]") }
        let host = try hostName(words[0], assignment)
        var addresses: [String] = []
        for word in words.dropFirst() {
            guard ConfigSyntax.isIPAddress(word) else { throw error(assignment, "invalid IP address \"\(word)\"") }
            addresses.append(word.lowercased())
        }
        return StaticAnswer(host: host, addresses: addresses)
    }

    private func hostName(_ word: String, _ assignment: INIReader.Assignment) throws(ConfigError) -> String {
        guard let host = ConfigSyntax.hostName(word) else {
            throw error(assignment, "invalid host name \"\(word)\"")
        }
        return host
    }

    /// nil for an empty value (unset); otherwise the path, which must be absolute.
    private func absolutePath(_ assignment: INIReader.Assignment) throws(ConfigError) -> String? {
        let value = assignment.value
        if value.isEmpty { return nil }
        guard value.utf8.first == UInt8(ascii: "/"),
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw error(assignment, "path is not absolute: \"\(value)\"") }
        return value
    }

    /// Milliseconds; `infinity` maps to the given value when the key accepts it.
    private func timeSpan(
        _ assignment: INIReader.Assignment,
        default defaultValue: Int,
        allowZero: Bool = true,
        infinity: Int? = nil
    ) throws(ConfigError) -> Int {
        let value = assignment.value
        if value.isEmpty { return defaultValue }
        if value == "infinity" {
            guard let infinity else { throw error(assignment, "\"infinity\" is not allowed here") }
            return infinity
        }
        guard let milliseconds = ConfigTimeSpan.milliseconds(value) else {
            throw error(assignment, "invalid time span \"\(value)\"")
        }
        guard allowZero || milliseconds > 0 else { throw error(assignment, "time span must be greater than 0") }
        return milliseconds
    }

    private func size(_ assignment: INIReader.Assignment, default defaultValue: Int) throws(ConfigError) -> Int {
        let value = assignment.value
        if value.isEmpty { return defaultValue }
        guard let bytes = ConfigByteSize.bytes(value) else { throw error(assignment, "invalid size \"\(value)\"") }
        guard bytes > 0 else { throw error(assignment, "size must be greater than 0") }
        return bytes
    }

    private func count(_ assignment: INIReader.Assignment, default defaultValue: Int) throws(ConfigError) -> Int {
        let value = assignment.value
        if value.isEmpty { return defaultValue }
        guard value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(value), number > 0 else {
            throw error(assignment, "invalid number \"\(value)\" (expected a positive integer)")
        }
        return number
    }

    /// 0, or a power of two within `Server.hostsMapSlotRange`: the map is a hash table.
    private func hostsMapSlots(_ assignment: INIReader.Assignment, default defaultValue: Int) throws(ConfigError) -> Int
    {
        let value = assignment.value
        if value.isEmpty { return defaultValue }
        let range = DaemonConfiguration.Server.hostsMapSlotRange
        guard value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(value),
            number == 0 || (range.contains(number) && number & (number - 1) == 0)
        else {
            throw error(
                assignment,
                "invalid hosts map size \"\(value)\" (expected 0, or a power of two from \(range.lowerBound) "
                    + "to \(range.upperBound))")
        }
        return number
    }

    private func boolean(_ assignment: INIReader.Assignment, default defaultValue: Bool) throws(ConfigError) -> Bool {
        let value = assignment.value
        if value.isEmpty { return defaultValue }
        guard let flag = ConfigBoolean.value(value) else { throw error(assignment, "invalid boolean \"\(value)\"") }
        return flag
    }

    // MARK: - Diagnostics

    private func error(_ assignment: INIReader.Assignment, _ message: String) -> ConfigError {
        ConfigError(path: path, line: assignment.line, key: assignment.key, message: message)
    }

    private mutating func warn(_ line: Int, _ message: String) {
        warnings.append(ConfigWarning(path: path, line: line, message: message))
    }
}

/// `[Fleet]` settings while the file is read; any of them may still be missing.
private struct FleetDraft {
    var headerLine: Int?
    var redis: FleetRedisAddress?
    var passwordFile: String?
    var name: String?
    var keyFile: String?
    var shareCache = true
    var shareCookiesOf: [FleetUser] = []
}
