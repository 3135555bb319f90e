import HTTPDNSCore
import HTTPDNSSodium
import HTTPDNSStore
import HTTPDNSSystem
import HTTPDNSSystemd

/// The state read at startup, on the loop thread, before the store thread takes the stores over.
struct StoredState {
    /// Every user's jar as stored; session cookies survive only within one boot.
    var jars: [UInt32: [Cookie]]
    /// The DNS cache and IP-to-host memory as last saved.
    var dns: DNSSnapshot
    /// With a fleet: this machine's id and the replication state.
    var fleet: (machine: FleetMachineID, state: FleetStoredState)?

    /// Reads the jars (a failure stops the daemon: serving without them would lose logins) and
    /// the DNS snapshot (a failure only costs the warm cache).
    static func load(from stores: StateStores, withFleet: Bool, logger: Logger) throws -> StoredState {
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
            jars = try stores.cookies.loadJars(bootID: bootID, now: WallClock.nowSeconds())
        } catch {
            throw StartupError("Failed to load the cookie jars: \(error)")
        }
        let dns: DNSSnapshot
        do {
            dns = try stores.dns.loadDNSSnapshot()
        } catch {
            logger.warning("Failed to load the saved DNS cache: \(error); starting empty")
            dns = DNSSnapshot()
        }
        var fleet: (machine: FleetMachineID, state: FleetStoredState)?
        if withFleet, let store = stores.fleet {
            do {
                // 16 random bytes, made once and kept with the state.
                let machine = try store.fleetMachineID { FleetMachineID(bytes: Sodium.randomBytes(16))! }
                fleet = (machine, try store.loadFleetState())
            } catch {
                throw StartupError("Failed to load the fleet's replication state: \(error)")
            }
        }
        return StoredState(jars: jars, dns: dns, fleet: fleet)
    }

    /// Puts the saved answers and address owners back into `resolver`.
    func restoreDNS(into resolver: ResolverService, logger: Logger) {
        let now = ResolverService.now()
        let wallNow = WallClock.nowSeconds()
        // Stored answers are validated again: a damaged file must not inject non-addresses.
        let restored = resolver.cache.restore(dns.entries, now: now, wallNow: wallNow) { address, family in
            guard let ip = IPAddress(address) else { return false }
            return ip.family == family
        }
        _ = resolver.owners.restore(dns.owners, now: now, wallNow: wallNow)
        if restored > 0 { logger.info("Restored \(restored) cached answer(s)") }
    }
}
