import HTTPDNSCore
import HTTPDNSSystem

/// Reads the configuration file from disk: `--config PATH` must exist; the default path is
/// optional, and without any file the daemon runs on its embedded default (the system resolver).
public enum ConfigurationLoader {
    static let defaultPath = "/etc/httpdnsd/httpdnsd.conf"

    static func load(explicitPath: String?) throws -> (DaemonConfiguration, [ConfigWarning]) {
        let path: String
        if let explicitPath {
            path = explicitPath
        } else if Files.exists(defaultPath) {
            path = defaultPath
        } else {
            return (DaemonConfiguration(), [])
        }
        let bytes: [UInt8]
        do {
            bytes = try Files.read(path, limit: 1 << 20)
        } catch {
            throw StartupError.configuration("Failed to read the configuration: \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw StartupError.configuration("\(path): the configuration is not valid UTF-8")
        }
        switch DaemonConfiguration.parse(text: text, path: path) {
        case .success(let (configuration, warnings)):
            return (try withAlibabaAESKeyFile(try withTencentFiles(try withSecretFromFile(configuration))), warnings)
        case .failure(let problems):
            throw StartupError.configuration(problems.description)
        }
    }

    /// `httpdnsd --check-config [FILE]`: reads and validates the configuration as a start would
    /// (`SecretKeyFile=` included), starting nothing. Prints the warnings and problems to stderr
    /// and a last line saying which file was checked; returns the exit status (0, or 78).
    public static func check(explicitPath: String?) -> Int32 {
        let shown = explicitPath ?? (Files.exists(defaultPath) ? defaultPath : "the embedded default")
        do {
            let (_, warnings) = try load(explicitPath: explicitPath)
            for warning in warnings { printToStandardError("warning: \(warning)") }
            printToStandardError("\(shown): configuration OK")
            return 0
        } catch let error as StartupError {
            for line in error.description.split(separator: "\n") { printToStandardError("error: \(line)") }
            printToStandardError("\(shown): configuration refused")
            return StartupError.configurationStatus
        } catch {
            printToStandardError("error: \(error)")
            return StartupError.configurationStatus
        }
    }

    private static func printToStandardError(_ line: String) {
        try? FileDescriptor.standardError.writeAll(Array((line + "\n").utf8))
    }

    /// `SecretKeyFile=` keeps the key out of the configuration file; when both are set the file wins.
    private static func withSecretFromFile(_ configuration: DaemonConfiguration) throws -> DaemonConfiguration {
        guard let file = configuration.resolver.secretKeyFile else { return configuration }
        let bytes: [UInt8]
        do {
            bytes = try Files.read(file, limit: 64 * 1024)
        } catch {
            throw StartupError.configuration("Failed to read SecretKeyFile=: \(error)")
        }
        let key = String(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
        guard !key.isEmpty else { throw StartupError.configuration("SecretKeyFile=\(file) is empty") }
        if configuration.resolver.alibabaAPI == .v2, AlibabaV2.signingKey(key) == nil {
            throw StartupError.configuration(
                "SecretKeyFile=\(file): AlibabaAPI=v2 signs with the secret's bytes: it must be hexadecimal")
        }
        var updated = configuration
        updated.resolver.secretKey = ConfigSecret(key)
        return updated
    }
}

extension ConfigurationLoader {
    /// `TencentKeyFile=` and `TencentTokenFile=`, read as credentials: a regular file no other
    /// user may read or write (a systemd `LoadCredential=` file is one), its contents trimmed; a
    /// key must have its cipher's length. Messages name the file, never what it holds.
    static func withTencentFiles(_ configuration: DaemonConfiguration) throws -> DaemonConfiguration {
        var updated = configuration
        let account = configuration.resolver.tencent
        if let file = account.keyFile {
            let key = try credential(file, key: "TencentKeyFile")
            if let problem = account.encryption.keyLengthProblem(key.utf8.count) {
                throw StartupError.configuration("TencentKeyFile=\(file): \(problem)")
            }
            updated.resolver.tencent.key = ConfigSecret(key)
        }
        if let file = account.tokenFile {
            updated.resolver.tencent.token = ConfigSecret(try credential(file, key: "TencentTokenFile"))
        }
        return updated
    }

    /// `AlibabaAESKeyFile=`, read as a credential, as the Tencent files are; it must hold 16
    /// bytes in hexadecimal.
    static func withAlibabaAESKeyFile(_ configuration: DaemonConfiguration) throws -> DaemonConfiguration {
        guard let file = configuration.resolver.alibabaAESKeyFile else { return configuration }
        let key = try credential(file, key: "AlibabaAESKeyFile")
        if let problem = AlibabaV2.encryptionKeyProblem(key) {
            throw StartupError.configuration("AlibabaAESKeyFile=\(file): \(problem)")
        }
        var updated = configuration
        updated.resolver.alibabaAESKey = ConfigSecret(key)
        return updated
    }

    private static func credential(_ file: String, key: String) throws -> String {
        var bytes: [UInt8]
        do {
            bytes = try Files.readSecret(file, limit: 4_096)
        } catch {
            throw StartupError.configuration("Failed to read \(key)=: \(error)")
        }
        defer { bytes.withUnsafeMutableBytes { for index in $0.indices { $0[index] = 0 } } }
        let text = String(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
        guard !text.isEmpty else { throw StartupError.configuration("\(key)=\(file) is empty") }
        return text
    }
}

extension DaemonConfiguration {
    var serverLimits: ServerLimits {
        var limits = ServerLimits()
        limits.maxLineLength = server.maxLineLength
        limits.maxConnections = server.maxConnections
        limits.maxConnectionsPerUser = server.maxConnectionsPerUser
        limits.maxRequestsInFlight = server.maxRequestsInFlight
        limits.maxRequestsInFlightPerUser = server.maxRequestsInFlightPerUser
        limits.maxBatch = server.maxBatch
        limits.idleTimeoutMilliseconds = Int64(server.idleTimeoutMs)
        limits.lineTimeoutMilliseconds = Int64(server.lineTimeoutMs)
        return limits
    }

    var cookieLimits: CookieJarLimits {
        CookieJarLimits(maxPerDomain: cookies.maxPerDomain, maxTotal: cookies.maxTotal)
    }

    var idleExitMilliseconds: Int64 { Int64(server.idleExitMs) }
    var socketPath: String? { server.socket }

    /// The longest shutdown grace period: the unit's `TimeoutStopSec=20s` less 5 s for saving the
    /// state and exiting, so systemd never has to kill the daemon mid-save.
    static let maximumShutdownGraceMilliseconds: Int64 = 15_000

    /// How long in-flight requests may run after SIGTERM: the upstream timeout plus a margin,
    /// whatever `Timeout=` is never past `maximumShutdownGraceMilliseconds`.
    var shutdownGraceMilliseconds: Int64 {
        min(Int64(resolver.timeoutMs) + 3_000, Self.maximumShutdownGraceMilliseconds)
    }
}
