// Interim stand-in until the Core configuration parser lands; removed at merge.
public struct DaemonConfiguration: Sendable {
    public var socketPath: String?
    public var serverLimits = ServerLimits()
    public var idleExitMilliseconds: Int64 = 60_000
    public var shutdownGraceMilliseconds: Int64 = 10_000
}

public struct ConfigWarning: CustomStringConvertible, Sendable { public var description: String }

enum ConfigurationLoader {
    static func load(explicitPath: String?) throws -> (DaemonConfiguration, [ConfigWarning]) {
        (DaemonConfiguration(), [])
    }
}
