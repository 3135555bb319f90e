/// Turns the kernel's address and route events into network changes: which events are a change
/// (an address not seen before, one that went, a route), and a burst of them (an interface coming
/// up brings an address, its routes and IPv6's second thoughts within milliseconds) is one change,
/// reported once the burst is over.
///
/// Value type, no I/O: the driver feeds it events and its timer with the time they happen at and
/// carries out what it returns (arm the one timer; apply `OnNetworkChange=` and log a change).
public struct NetworkChangeMachine: Sendable {
    /// A burst ends once this long passes without another event that is a change.
    public static let quietMilliseconds = 1_000
    /// ... or this long after its first one, so that a steady stream of changes (a routing daemon)
    /// still makes one change per this period, not one that never ends.
    public static let longestBurstMilliseconds = 10_000
    /// Changes are reported at least this far apart (Alibaba's iOS SDK handles a change only 5 s
    /// after the last one): a flapping link costs one refresh of the cache per period.
    public static let minimumSpacingMilliseconds = 5_000
    /// Addresses remembered, so that a lifetime update of one already there (IPv6 router
    /// advertisements renew theirs every few minutes, DHCP at each lease renewal) is no change.
    /// Past it new addresses still count as changes but are not remembered.
    public static let maxKnownAddresses = 4_096

    /// What the driver does.
    public enum Action: Sendable, Equatable {
        /// (Re-)arm the machine's one timer; call `timerFired` then.
        case armTimer(at: MonotonicInstant)
        /// A change is over: apply the policy and log it, once.
        case changed(NetworkChange)
    }

    /// The addresses on the machine, as far as the events told.
    private var known: Set<NetworkAddress> = []
    /// The burst under way.
    private var burst: NetworkChange?
    /// When the burst under way ends, unless another change comes first.
    private var deadline = MonotonicInstant(nanoseconds: 0)
    /// Changes reported since start.
    public private(set) var changes = 0
    /// When the last change was reported.
    public private(set) var lastChange: MonotonicInstant?

    public init() {}

    /// An event from the kernel at `now`.
    public mutating func received(_ event: NetworkEvent, now: MonotonicInstant) -> Action? {
        var change = burst ?? NetworkChange(firstSeen: now)
        switch event {
        case .address(let address, let added, let listed):
            // A link-local IPv6 address comes with every interface and leads nowhere.
            if address.isIPv6LinkLocal { return nil }
            if added {
                let isNew = !known.contains(address)
                if isNew, known.count < Self.maxKnownAddresses { known.insert(address) }
                // Listed at start: what the machine had already, not a change.
                guard isNew, !listed else { return nil }
                change.addressesAdded += 1
            } else {
                known.remove(address)
                change.addressesRemoved += 1
            }
            if change.addresses.count < NetworkChange.addressesNamed {
                change.addresses.append((added ? "+" : "-") + address.description)
            }
        case .route(let route, let added):
            guard route.isRouting else { return nil }
            if added { change.routesAdded += 1 } else { change.routesRemoved += 1 }
        case .lost:
            change.lostEvents = true
        }
        burst = change
        let longest = change.firstSeen.advanced(byMilliseconds: Self.longestBurstMilliseconds)
        let quietEnd = now.advanced(byMilliseconds: Self.quietMilliseconds)
        deadline = quietEnd < longest ? quietEnd : longest
        if let lastChange {
            let spaced = lastChange.advanced(byMilliseconds: Self.minimumSpacingMilliseconds)
            if deadline < spaced { deadline = spaced }
        }
        return .armTimer(at: deadline)
    }

    /// The timer fired at `now`: a burst whose end has come is one change.
    public mutating func timerFired(now: MonotonicInstant) -> Action? {
        guard var change = burst else { return nil }
        guard deadline <= now else { return .armTimer(at: deadline) }
        burst = nil
        change.at = now
        changes += 1
        lastChange = now
        return .changed(change)
    }
}

/// One network change: what the events of one burst were.
public struct NetworkChange: Sendable, Equatable {
    /// Addresses a log line names at most.
    static let addressesNamed = 4

    public var addressesAdded = 0
    public var addressesRemoved = 0
    public var routesAdded = 0
    public var routesRemoved = 0
    /// The kernel dropped notifications during the burst.
    public var lostEvents = false
    /// The first addresses that came (`+10.9.9.9/32`) or went (`-...`), for the log.
    public var addresses: [String] = []
    /// The first event of the burst.
    public var firstSeen: MonotonicInstant
    /// When the burst was over.
    public var at: MonotonicInstant

    public init(firstSeen: MonotonicInstant) {
        self.firstSeen = firstSeen
        at = firstSeen
    }

    /// `1 address added (+10.9.9.9/32), 2 routes added`.
    public var description: String {
        var parts: [String] = []
        func counted(_ count: Int, _ noun: String, _ verb: String) {
            guard count > 0 else { return }
            parts.append("\(count) \(noun)\(count == 1 ? "" : noun == "address" ? "es" : "s") \(verb)")
        }
        counted(addressesAdded, "address", "added")
        counted(addressesRemoved, "address", "removed")
        if !addresses.isEmpty, !parts.isEmpty {
            parts[parts.count - 1] += " (" + addresses.joined(separator: " ") + ")"
        }
        counted(routesAdded, "route", "added")
        counted(routesRemoved, "route", "removed")
        if lostEvents { parts.append("some events lost") }
        return parts.joined(separator: ", ")
    }
}
