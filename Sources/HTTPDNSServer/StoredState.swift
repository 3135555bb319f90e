import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSodium
import HTTPDNSStore
import HTTPDNSSystem
import HTTPDNSSystemd

/// The state read at startup, on the loop thread, before the store thread takes the stores over.
struct StoredState {
    /// Every user's jar as stored; session cookies survive only within one boot.
    var jars: [UInt32: [Cookie]]
    /// With a fleet: this machine's id and the replication state.
    var fleet: (machine: FleetMachineID, state: FleetStoredState)?

    /// Reads the jars as of `now` (a failure stops the daemon: serving without them would lose
    /// logins). The DNS snapshot is read later, once the daemon serves (`SavedDNSRestore`).
    static func load(from stores: StateStores, withFleet: Bool, now: Int64, logger: Logger) throws -> StoredState {
        let bootID: String
        do {
            bootID = try BootID.current()
        } catch {
            // Without a boot id, session cookies cannot be told apart by boot: keep the stored ones.
            logger.warning("Failed to read the boot id: \(error)")
            bootID = "unknown"
        }
        let jars: [UInt32: [Cookie]]
        do {
            jars = try stores.jars.loadJars(bootID: bootID, now: now)
        } catch {
            throw StartupError("Failed to load the cookie jars: \(error)")
        }
        var fleet: (machine: FleetMachineID, state: FleetStoredState)?
        if withFleet {
            do {
                // 16 random bytes, made once and kept with the state.
                let machine = try stores.jars.fleetMachineID { FleetMachineID(bytes: Sodium.randomBytes(16))! }
                fleet = (machine, try stores.jars.loadFleetState())
            } catch {
                throw StartupError("Failed to load the fleet's replication state: \(error)")
            }
        }
        return StoredState(jars: jars, fleet: fleet)
    }
}
