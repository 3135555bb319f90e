/// Where an upstream's service addresses come from (`AlibabaRegion=`, `AlibabaBootAddresses=`,
/// `SchedulerRefresh=`, `TencentBackupAddresses=` in `[Resolver]`).
public struct ServiceAddressSettings: Sendable, Equatable {
    /// `AlibabaRegion=`: nil leaves `alibaba` upstreams on their URL's address alone.
    public var alibabaRegion: String?
    /// `AlibabaBootAddresses=`: replaces the region's built-in boot addresses; nil keeps them.
    public var alibabaBootAddresses: [String]?
    /// `SchedulerRefresh=`: how long a scheduler answer is used before it is asked again.
    public var schedulerRefreshMs: Int
    /// `TencentBackupAddresses=`: tried after a `tencent` upstream's URL address fails.
    public var tencentBackupAddresses: [String]
    /// `Timeout=`: the total deadline of one scheduler request.
    public var timeoutMs: Int

    public init(_ resolver: DaemonConfiguration.Resolver) {
        alibabaRegion = resolver.alibabaRegion
        alibabaBootAddresses = resolver.alibabaBootAddresses
        schedulerRefreshMs = resolver.schedulerRefreshMs
        tencentBackupAddresses = resolver.tencentBackupAddresses
        timeoutMs = resolver.timeoutMs
    }

    /// The boot addresses of an `alibaba` upstream at `url` (its host first), or nil when it is
    /// not scheduled.
    func bootAddresses(url: String) -> [String]? {
        guard let region = alibabaRegion else { return nil }
        var boot: [String] = []
        for address in [ServiceURL.host(of: url)].compactMap({ $0 })
            + (alibabaBootAddresses ?? AlibabaScheduler.builtInBootAddresses[region] ?? [])
        where !boot.contains(address) {
            boot.append(address)
        }
        return boot
    }
}
