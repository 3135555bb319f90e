import HTTPDNSProtocol

/// One scheduler request for the driver to run within `timeoutMs`; report with
/// `ServiceAddressBook.fetchFinished`.
public struct ServiceAddressFetch: Sendable, Equatable {
    public var id: UInt64
    /// The upstream's name, for logs.
    public var upstream: String
    /// The upstream's URL (its account path); `address` replaces its host.
    public var baseURL: String
    /// The boot address asked.
    public var address: String
    public var region: String
    public var timeoutMs: Int
}

/// A scheduler answer as it is kept in the state directory, so a restart with the scheduler down
/// still starts from it.
public struct PersistedServiceAddresses: Sendable, Equatable {
    /// Which upstream's list it is (`ServiceAddressBook.key`): its URL and region.
    public var key: String
    public var addresses: [String]
    /// When the scheduler gave it, in Unix seconds.
    public var fetchedAt: Int64

    public init(key: String, addresses: [String], fetchedAt: Int64) {
        self.key = key
        self.addresses = addresses
        self.fetchedAt = fetchedAt
    }
}

/// What the driver does for the service addresses.
public enum ServiceAddressAction: Sendable, Equatable {
    /// Ask a scheduler; report with `fetchFinished`.
    case fetch(ServiceAddressFetch)
    /// Write these lists to the state directory, replacing what is there (write a temporary file,
    /// then rename it over the old one).
    case persist([PersistedServiceAddresses])
    /// Call `timerFired(key)` at `at` (re-arming replaces the timer of the same key).
    case armTimer(key: String, at: MonotonicInstant)
    case log(ResolverLogLevel, String)
}

/// The service addresses of every upstream that has several: the current address each query
/// goes to, rotated on service failures, and for scheduled `alibaba` upstreams the scheduler's
/// list, refreshed and persisted.
///
/// An address is rotated out after `rotationFailures` failures in a row that were the service's
/// (the resolver reports only those: a name's own failure, or a time-out a probe did not confirm,
/// never counts), and tried again after a backoff (30 s, doubling to 10 min). Queries go to the
/// current address while it is not backing off; when every address is, the one whose backoff ends
/// first. A scheduled list starts from the persisted answer when there is one (refreshed once it
/// is `SchedulerRefresh=` old), else from the boot addresses; the scheduler is asked at each boot
/// address in turn, again every `SchedulerRefresh=` after an answer, 5 minutes after a round that
/// got none, and early (at most every 30 s) when every address is backing off.
public struct ServiceAddressBook {
    /// Failures in a row that rotate an address out (Tencent's SDK switches after 3 errors).
    public static let rotationFailures = 3
    /// The first backoff of a rotated-out address, and the longest, in seconds.
    public static let initialRetrySeconds = 30
    public static let maximumRetrySeconds = 600
    /// After a round that reached no scheduler (Alibaba's C SDK's 5 minutes).
    public static let retryAfterFailedRoundMs = 300_000
    /// The least time between rounds started because every address was backing off.
    public static let minimumEarlyRoundMs = 30_000

    /// Where a list's addresses came from.
    public enum Source: String, Sendable {
        /// The URL's address and `TencentBackupAddresses=`.
        case configured
        /// The boot addresses: no scheduler answer yet.
        case boot
        /// The scheduler's answer saved by an earlier run.
        case persisted
        /// The scheduler's answer of this run.
        case scheduler
    }

    struct Entry {
        var address: String
        var failures = 0
        var rotations = 0
        var retryAt: MonotonicInstant?
    }

    struct List {
        let key: String
        var upstream: String
        let baseURL: String
        /// The scheduler's region and boot addresses; nil for a configured list.
        let region: String?
        let boot: [String]
        var entries: [Entry]
        var current = 0
        var source: Source
        var fetching: (id: UInt64, bootIndex: Int)?
        /// The boot address that answered last: the next round starts there.
        var preferredBoot = 0
        var nextFetchAt: MonotonicInstant?
        var lastRoundAt: MonotonicInstant?
        var lastError: String?
    }

    public private(set) var settings: ServiceAddressSettings
    var lists: [List] = []
    /// Saved answers by key: what `start` read, updated by each answer.
    var persisted: [String: PersistedServiceAddresses] = [:]
    private var started = false
    private var lastID: UInt64 = 0
    private var actions: [ServiceAddressAction] = []

    /// The lists of `upstreams` under `settings`; nothing is fetched before `start`.
    public init(_ settings: ServiceAddressSettings, upstreams: [UpstreamEndpoint]) {
        self.settings = settings
        lists = Self.lists(settings, upstreams: upstreams)
    }

    /// The key of the list of `endpoint`: scheduled lists of another URL or region are another
    /// account's or region's.
    public static func key(_ endpoint: UpstreamEndpoint, region: String?) -> String {
        "\(endpoint.kind.rawValue) \(endpoint.url ?? "")" + (region.map { " region=\($0)" } ?? "")
    }

    private static func lists(_ settings: ServiceAddressSettings, upstreams: [UpstreamEndpoint]) -> [List] {
        var lists: [List] = []
        for endpoint in upstreams {
            guard let url = endpoint.url else { continue }
            let key: String
            let region: String?
            var boot: [String] = []
            var addresses: [String]
            switch endpoint.descriptor.serviceAddresses {
            case .scheduler:
                guard let scheduled = settings.bootAddresses(url: url), !scheduled.isEmpty else { continue }
                region = settings.alibabaRegion
                boot = scheduled
                addresses = scheduled
            case .backups:
                guard !settings.tencentBackupAddresses.isEmpty, let host = ServiceURL.host(of: url) else { continue }
                region = nil
                addresses = [host]
                for backup in settings.tencentBackupAddresses where !addresses.contains(backup) {
                    addresses.append(backup)
                }
            case .url:
                continue
            }
            key = Self.key(endpoint, region: region)
            guard !lists.contains(where: { $0.key == key }) else { continue }
            lists.append(
                List(
                    key: key, upstream: endpoint.name, baseURL: url, region: region, boot: boot,
                    entries: addresses.map { Entry(address: $0) }, source: region == nil ? .configured : .boot))
        }
        return lists
    }

    // MARK: actions

    /// Whether actions wait for the driver.
    public var hasActions: Bool { !actions.isEmpty }

    /// The actions collected since the last call, oldest first.
    public mutating func takeActions() -> [ServiceAddressAction] {
        defer { actions.removeAll() }
        return actions
    }

    // MARK: events

    /// The saved answers are read (`wallNow` in Unix seconds): each scheduled list starts from
    /// its own, and asks the scheduler now, or once the saved answer is `SchedulerRefresh=` old.
    public mutating func start(persisted saved: [PersistedServiceAddresses], now: MonotonicInstant, wallNow: Int64) {
        for record in saved { persisted[record.key] = record }
        started = true
        for index in lists.indices where lists[index].region != nil { startList(index, now: now, wallNow: wallNow) }
    }

    private mutating func startList(_ index: Int, now: MonotonicInstant, wallNow: Int64) {
        guard let record = persisted[lists[index].key] else {
            startRound(index, now: now)
            return
        }
        lists[index].entries = record.addresses.map { Entry(address: $0) }
        lists[index].current = 0
        lists[index].source = .persisted
        let ageMs = Int(clamping: max(0, wallNow - record.fetchedAt)) * 1_000
        guard ageMs < settings.schedulerRefreshMs else {
            startRound(index, now: now)
            return
        }
        scheduleFetch(index, at: now.advanced(byMilliseconds: settings.schedulerRefreshMs - ageMs))
    }

    /// The address a query of `endpoint` goes to now, or nil when it has no list (its URL as
    /// configured). Moves off a current address that is backing off.
    public mutating func address(for endpoint: UpstreamEndpoint, now: MonotonicInstant) -> String? {
        guard let index = listIndex(endpoint) else { return nil }
        if let retryAt = lists[index].entries[lists[index].current].retryAt, retryAt > now {
            lists[index].current = nextCurrent(index, now: now)
        }
        return lists[index].entries[lists[index].current].address
    }

    /// Another address of `endpoint`'s list than `address` that is not backing off, the next in
    /// the list's order: where a query whose connection failed at `address` is sent again at
    /// once, as the SDKs retry once at the next service address. Nil without one.
    public func alternative(for endpoint: UpstreamEndpoint, after address: String, now: MonotonicInstant) -> String? {
        guard let index = listIndex(endpoint) else { return nil }
        let entries = lists[index].entries
        guard let position = entries.firstIndex(where: { $0.address == address }) else { return nil }
        for step in 1..<max(entries.count, 1) {
            let candidate = entries[(position + step) % entries.count]
            if (candidate.retryAt ?? now) <= now { return candidate.address }
        }
        return nil
    }

    /// A query of `endpoint` at `address` got an answer of the service's (any answer, "no such
    /// name" included).
    public mutating func succeeded(_ endpoint: UpstreamEndpoint, address: String?, now: MonotonicInstant) {
        guard let address, let index = listIndex(endpoint),
            let entry = lists[index].entries.firstIndex(where: { $0.address == address })
        else { return }
        lists[index].entries[entry].failures = 0
        lists[index].entries[entry].rotations = 0
        lists[index].entries[entry].retryAt = nil
    }

    /// A query of `endpoint` at `address` met a failure of the service's (`error`, one line
    /// without secrets): the address is rotated out at the `rotationFailures`th in a row.
    public mutating func failed(
        _ endpoint: UpstreamEndpoint, address: String?, error: String, now: MonotonicInstant
    ) {
        guard let address, let index = listIndex(endpoint),
            let entry = lists[index].entries.firstIndex(where: { $0.address == address })
        else { return }
        lists[index].entries[entry].failures += 1
        guard lists[index].entries[entry].failures >= Self.rotationFailures else { return }
        lists[index].entries[entry].failures = 0
        lists[index].entries[entry].rotations += 1
        let seconds = Self.retrySeconds(afterRotations: lists[index].entries[entry].rotations)
        lists[index].entries[entry].retryAt = now.advanced(bySeconds: seconds)
        if lists[index].current == entry { lists[index].current = nextCurrent(index, now: now) }
        let next = lists[index].entries[lists[index].current].address
        actions.append(
            .log(
                .warning,
                "Upstream \(lists[index].upstream): service address \(address) failed \(Self.rotationFailures) times "
                    + "in a row (\(error)); using \(next), \(address) is tried again in \(seconds) s"))
        let everyAddressBacksOff = lists[index].entries.allSatisfy { ($0.retryAt ?? now) > now }
        if everyAddressBacksOff, lists[index].region != nil, lists[index].fetching == nil,
            lists[index].lastRoundAt.map({ $0.advanced(byMilliseconds: Self.minimumEarlyRoundMs) <= now }) ?? true
        {
            startRound(index, now: now)
        }
    }

    /// The backoff of an address rotated out `rotations` times since it last answered.
    public static func retrySeconds(afterRotations rotations: Int) -> Int {
        min(initialRetrySeconds << min(max(rotations - 1, 0), 5), maximumRetrySeconds)
    }

    /// A scheduler request ended with its addresses (already validated by `AlibabaScheduler`)
    /// or why it failed; `wallNow` in Unix seconds dates a saved answer.
    public mutating func fetchFinished(
        _ id: UInt64, _ result: Result<[IPAddress], UpstreamError>, now: MonotonicInstant, wallNow: Int64
    ) {
        guard let index = lists.firstIndex(where: { $0.fetching?.id == id }),
            let fetching = lists[index].fetching
        else { return }
        lists[index].fetching = nil
        switch result {
        case .success(let addresses):
            adopt(index, addresses.map(\.description), now: now)
            lists[index].source = .scheduler
            lists[index].lastError = nil
            lists[index].preferredBoot = fetching.bootIndex
            let record = PersistedServiceAddresses(
                key: lists[index].key, addresses: lists[index].entries.map(\.address), fetchedAt: wallNow)
            persisted[record.key] = record
            actions.append(.persist(lists.compactMap { persisted[$0.key] }))
            actions.append(
                .log(
                    .info,
                    "Upstream \(lists[index].upstream): the scheduler at \(lists[index].boot[fetching.bootIndex]) "
                        + "lists \(addresses.count) service address(es)"))
            scheduleFetch(index, at: now.advanced(byMilliseconds: settings.schedulerRefreshMs))
        case .failure(let error):
            lists[index].lastError = "\(lists[index].boot[fetching.bootIndex]): \(error)"
            let next = (fetching.bootIndex + 1) % lists[index].boot.count
            if next != lists[index].preferredBoot {
                fetch(index, bootIndex: next)
                return
            }
            let retryMs = min(Self.retryAfterFailedRoundMs, settings.schedulerRefreshMs)
            actions.append(
                .log(
                    .warning,
                    "Upstream \(lists[index].upstream): no scheduler answered (last: \(lists[index].lastError ?? "")); "
                        + "asking again in \(retryMs / 1_000) s"))
            scheduleFetch(index, at: now.advanced(byMilliseconds: retryMs))
        }
    }

    /// A timer armed for `key` fired: its list's scheduler is asked if that is due.
    public mutating func timerFired(key: String, now: MonotonicInstant) {
        guard let index = lists.firstIndex(where: { $0.key == key }), lists[index].fetching == nil,
            let due = lists[index].nextFetchAt, due <= now
        else { return }
        startRound(index, now: now)
    }

    /// A reloaded configuration: lists whose upstream, region and addresses stay keep their
    /// state (and a scheduler request under way); the others start again, from a saved answer
    /// when there is one.
    public mutating func apply(
        _ settings: ServiceAddressSettings, upstreams: [UpstreamEndpoint], now: MonotonicInstant, wallNow: Int64
    ) {
        let refreshChanged = settings.schedulerRefreshMs != self.settings.schedulerRefreshMs
        self.settings = settings
        var fresh = Self.lists(settings, upstreams: upstreams)
        var restart: [Int] = []
        for index in fresh.indices {
            if let old = lists.first(where: {
                $0.key == fresh[index].key && $0.boot == fresh[index].boot
                    && ($0.region != nil || $0.entries.map(\.address) == fresh[index].entries.map(\.address))
            }) {
                let upstream = fresh[index].upstream
                fresh[index] = old
                fresh[index].upstream = upstream
                if refreshChanged, old.fetching == nil, old.region != nil { restart.append(index) }
            } else if fresh[index].region != nil {
                restart.append(index)
            }
        }
        lists = fresh
        guard started else { return }
        for index in restart {
            if lists[index].source == .scheduler, let record = persisted[lists[index].key] {
                // Only the refresh interval changed: the answer is kept, its next refresh moved.
                let ageMs = Int(clamping: max(0, wallNow - record.fetchedAt)) * 1_000
                scheduleFetch(index, at: now.advanced(byMilliseconds: max(0, settings.schedulerRefreshMs - ageMs)))
            } else {
                startList(index, now: now, wallNow: wallNow)
            }
        }
    }

    // MARK: status

    /// The list of `endpoint` for `status`, or nil when it has none.
    public func status(for endpoint: UpstreamEndpoint, now: MonotonicInstant) -> ServiceAddressesStatus? {
        guard let index = listIndex(endpoint) else { return nil }
        let list = lists[index]
        return ServiceAddressesStatus(
            source: list.source.rawValue, current: list.entries[list.current].address,
            addresses: list.entries.map {
                ServiceAddressesStatus.Address(
                    address: $0.address, failures: $0.failures, backingOff: ($0.retryAt ?? now) > now)
            },
            schedulerError: list.lastError,
            nextRefresh: list.fetching != nil
                ? 0 : list.nextFetchAt.map { Double(max(0, $0.nanoseconds(since: now)) / 1_000_000) / 1_000 })
    }

    // MARK: internals

    private func listIndex(_ endpoint: UpstreamEndpoint) -> Int? {
        guard !lists.isEmpty else { return nil }
        let region = endpoint.descriptor.serviceAddresses == .scheduler ? settings.alibabaRegion : nil
        let key = Self.key(endpoint, region: region)
        return lists.firstIndex { $0.key == key }
    }

    /// The address after the current one that is not backing off; when every one is, the one
    /// whose backoff ends first.
    private func nextCurrent(_ index: Int, now: MonotonicInstant) -> Int {
        let entries = lists[index].entries
        for step in 1...entries.count {
            let candidate = (lists[index].current + step) % entries.count
            if (entries[candidate].retryAt ?? now) <= now { return candidate }
        }
        return entries.indices.min { (entries[$0].retryAt ?? now) < (entries[$1].retryAt ?? now) } ?? 0
    }

    /// A scheduler answer becomes the list: addresses it keeps keep their failures and backoff,
    /// and the current address stays current when it is listed.
    private mutating func adopt(_ index: Int, _ addresses: [String], now: MonotonicInstant) {
        let old = lists[index].entries
        let current = old[lists[index].current].address
        lists[index].entries = addresses.map { address in old.first { $0.address == address } ?? Entry(address: address)
        }
        lists[index].current = lists[index].entries.firstIndex { $0.address == current } ?? 0
        if let retryAt = lists[index].entries[lists[index].current].retryAt, retryAt > now {
            lists[index].current = nextCurrent(index, now: now)
        }
    }

    private mutating func startRound(_ index: Int, now: MonotonicInstant) {
        guard lists[index].fetching == nil, !lists[index].boot.isEmpty else { return }
        lists[index].lastRoundAt = now
        lists[index].nextFetchAt = nil
        fetch(index, bootIndex: lists[index].preferredBoot)
    }

    private mutating func fetch(_ index: Int, bootIndex: Int) {
        lastID += 1
        lists[index].fetching = (lastID, bootIndex)
        actions.append(
            .fetch(
                ServiceAddressFetch(
                    id: lastID, upstream: lists[index].upstream, baseURL: lists[index].baseURL,
                    address: lists[index].boot[bootIndex], region: lists[index].region ?? "",
                    timeoutMs: settings.timeoutMs)))
    }

    private mutating func scheduleFetch(_ index: Int, at: MonotonicInstant) {
        lists[index].nextFetchAt = at
        actions.append(.armTimer(key: lists[index].key, at: at))
    }
}

@available(*, unavailable, message: "the resolver belongs to one thread (the I/O loop)")
extension ServiceAddressBook: Sendable {}
