import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSRedis
import HTTPDNSSodium
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization

/// What a daemon stores for the fleet, as a test keeps it between "restarts".
struct StoredFleetState: Sendable {
    var cookies: [FleetCookieAddress: FleetCookieValue] = [:]
    var registers: [FleetCookieAddress: FleetCookieReplica.Register] = [:]
    var outbox: [FleetOutboxEntry] = []
    var cursor: FleetCursor?
    var lastPublishedID: FleetStreamID?
}

/// A stand-in for one daemon's shared jar and store: it applies what the replicator decides,
/// exactly as the wiring will, and lets the test read the result from its own thread.
final class SharedJarModel: FleetReplicatorDelegate {
    let state: Mutex<StoredFleetState>
    weak var replicator: FleetCookieReplicator?
    /// Log lines the client wrote.
    let logs = Recorder<FleetLogLine>()

    init(_ stored: StoredFleetState = StoredFleetState()) {
        state = Mutex(stored)
    }

    func fleetApply(_ outcomes: [FleetCookieReplica.Outcome], cursor: FleetCursor) {
        let registers = replicator?.replica.registers ?? [:]
        state.withLock { state in
            for outcome in outcomes {
                switch outcome {
                case .store(let address, let value):
                    state.cookies[address] = value
                    state.registers[address] = registers[address]
                case .remove(let address):
                    state.cookies[address] = nil
                    state.registers[address] = registers[address]
                case .ignored: break
                }
            }
            state.cursor = cursor
        }
    }

    func fleetCurrentValue(of address: FleetCookieAddress) -> FleetCookieValue? {
        state.withLock { $0.cookies[address] }
    }

    func fleetAcknowledged(through sequence: Int64, published: FleetStreamID?) {
        state.withLock { state in
            if let published { state.lastPublishedID = published }
        }
    }

    func fleetForget(_ addresses: [FleetCookieAddress]) {
        state.withLock { state in for address in addresses { state.registers[address] = nil } }
    }

    var cookies: [FleetCookieAddress: String] {
        state.withLock { $0.cookies.mapValues(\.value) }
    }
}

@available(*, unavailable)
extension SharedJarModel: Sendable {}

/// One daemon of a test fleet: its loop, client, replicator and jar model.
final class TestFleetDaemon: @unchecked Sendable {
    // @unchecked: the loop-confined objects are only touched through `thread.run`.
    let thread = LoopThread()
    let machine: FleetMachineID
    let model: SharedJarModel
    private nonisolated(unsafe) var client: FleetClient!
    private nonisolated(unsafe) var replicator: FleetCookieReplicator?
    private nonisolated(unsafe) var outbox: InMemoryFleetOutbox!
    static let jar = "user:crawler"

    init(
        server: RedisServer, machine: FleetMachineID, key: FleetKey = FleetFixtures.key(),
        stored: StoredFleetState = StoredFleetState(), configure: (inout FleetClientOptions) -> Void = { _ in },
        replicate: Bool = true
    ) {
        self.machine = machine
        model = SharedJarModel(stored)
        var options = FleetClientOptions(redis: FleetFixtures.redisOptions(server), fleetName: "gateways")
        options.streamBlockMilliseconds = 200
        options.backoff = FleetBackoff(initialMilliseconds: 20, maximumMilliseconds: 200)
        configure(&options)
        nonisolated(unsafe) let model = self.model
        let finalOptions = options
        thread.run { [self] loop in
            client = FleetClient(options: finalOptions, key: key, loop: loop) { line in model.logs.append(line) }
            guard replicate else { return }
            outbox = InMemoryFleetOutbox(entries: stored.outbox)
            let replicator = FleetCookieReplicator(
                client: client,
                replica: FleetCookieReplica(machine: machine, registers: stored.registers),
                outbox: outbox, delegate: model)
            model.replicator = replicator
            self.replicator = replicator
            replicator.start(cursor: stored.cursor, lastPublishedID: stored.lastPublishedID)
        }
    }

    /// A local change of the shared jar, committed (to the model) with its outbox entries.
    func change(_ name: String, to value: String?, domain: String = "login.example.com") {
        thread.run { [self] _ in
            let change: CookieChange =
                value.map { .upsert(FleetFixtures.cookie(name, value: $0, domain: domain)) }
                ?? .delete(CookieKey(domain: domain, path: "/", name: name))
            let recorded = replicator!.recordLocal([change], jar: Self.jar)
            model.state.withLock { state in
                for (address, register) in recorded.registers { state.registers[address] = register }
                for entry in recorded.entries {
                    switch entry.change.content {
                    case .set(let cookie): state.cookies[entry.change.address] = cookie
                    case .deleted: state.cookies[entry.change.address] = nil
                    }
                }
            }
            replicator!.localCommitted(recorded)
        }
    }

    var outboxCount: Int { thread.run { [self] _ in outbox?.count ?? 0 } }

    func status() -> FleetStatus { thread.run { [self] _ in client.status(outbox: outbox?.count ?? 0) } }

    /// Runs `body` with the client on the loop.
    func withClient<T>(_ body: @escaping (FleetClient) -> T) -> T {
        thread.run { [self] _ in body(client) }
    }

    /// Stops the client and the loop, and returns what the daemon had stored.
    func stop() -> StoredFleetState {
        let outboxEntries = thread.run { [self] _ -> [FleetOutboxEntry] in
            client.shutdown()
            return outbox?.pending(limit: Int.max) ?? []
        }
        thread.stop()
        var stored = model.state.withLock { $0 }
        stored.outbox = outboxEntries
        return stored
    }
}
