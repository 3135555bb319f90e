import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite

/// The fleet tier's rows: registers, outbox and shared jars in their tables (migration
/// 0004-fleet), the machine id and stream positions in `meta`. Writes arrive with cookie batches
/// (`StateBatch.fleet`), in their transaction.
extension SQLiteStateStore: FleetStateStore {
    enum FleetMetaKey {
        static let machineID = "fleet_machine_id"
        static let cursor = "fleet_cursor"
        static let lastPublished = "fleet_last_published"
    }

    public func loadFleetState() throws(StoreError) -> FleetStoredState {
        try read { database throws(SQLiteError) in
            var state = FleetStoredState()
            try database.prepare(
                "SELECT jar, domain, path, name, updated_ms, machine, deleted FROM fleet_registers"
            ).query { row in
                // The file is not trusted: a row that is not a register is skipped.
                guard let machine = FleetMachineID(row.string(5)) else { return }
                let address = FleetCookieAddress(
                    jar: row.string(0), key: CookieKey(domain: row.string(1), path: row.string(2), name: row.string(3)))
                state.registers[address] = FleetCookieReplica.Register(
                    version: FleetVersion(updatedAtMs: row.int64(4), machine: machine), deleted: row.int64(6) != 0)
            }
            try database.prepare("SELECT sequence, change FROM fleet_outbox ORDER BY sequence").query { row in
                guard case .success(let change) = FleetCookieChange.decode(Array(row.string(1).utf8)) else { return }
                state.outbox.append(FleetOutboxEntry(sequence: row.int64(0), change: change))
            }
            try database.prepare("SELECT jar FROM fleet_jars").query { row in state.seededJars.insert(row.string(0)) }
            let meta = try Self.meta(database, keys: [FleetMetaKey.cursor, FleetMetaKey.lastPublished])
            if let text = meta[FleetMetaKey.cursor], let space = text.lastIndex(of: " "),
                let id = FleetStreamID(String(text[text.index(after: space)...]))
            {
                state.cursor = FleetCursor(epoch: String(text[..<space]), lastID: id)
            }
            state.lastPublishedID = meta[FleetMetaKey.lastPublished].flatMap(FleetStreamID.init)
            return state
        }
    }

    public func fleetMachineID(orCreate make: () -> FleetMachineID) throws(StoreError) -> FleetMachineID {
        let database = try openDatabase()
        do {
            return try database.transaction { () throws(SQLiteError) in
                if let stored = try Self.meta(database, keys: [FleetMetaKey.machineID])[FleetMetaKey.machineID],
                    let machine = FleetMachineID(stored)
                {
                    return machine
                }
                let made = make()
                try statement(.setMeta, on: database).run([.text(FleetMetaKey.machineID), .text(made.text)])
                return made
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Writes one batch's fleet records (inside its transaction).
    func apply(_ fleet: FleetStoreWrite, on database: SQLiteDatabase) throws(SQLiteError) {
        for address in fleet.forgottenRegisters {
            try statement(.deleteRegister, on: database).run(Self.addressValues(address))
        }
        for (address, register) in fleet.registers {
            try statement(.upsertRegister, on: database).run(
                Self.addressValues(address) + [
                    .integer(register.version.updatedAtMs), .text(register.version.machine.text),
                    .integer(register.deleted ? 1 : 0),
                ])
        }
        if let through = fleet.acknowledgedThrough {
            try statement(.acknowledgeOutbox, on: database).run([.integer(through)])
        }
        for entry in fleet.outbox {
            try statement(.insertOutboxEntry, on: database).run([
                .integer(entry.sequence), .text(String(decoding: entry.change.encoded(), as: UTF8.self)),
            ])
        }
        if let cursor = fleet.cursor {
            try statement(.setMeta, on: database).run([
                .text(FleetMetaKey.cursor), .text("\(cursor.epoch) \(cursor.lastID)"),
            ])
        }
        if let id = fleet.lastPublishedID {
            try statement(.setMeta, on: database).run([.text(FleetMetaKey.lastPublished), .text(id.description)])
        }
        for jar in fleet.unseeded { try statement(.deleteSeededJar, on: database).run([.text(jar)]) }
        for jar in fleet.seeded { try statement(.insertSeededJar, on: database).run([.text(jar)]) }
    }

    private static func addressValues(_ address: FleetCookieAddress) -> [SQLiteValue] {
        [.text(address.jar), .text(address.key.domain), .text(address.key.path), .text(address.key.name)]
    }

    private static func meta(_ database: SQLiteDatabase, keys: [String]) throws(SQLiteError) -> [String: String] {
        var values: [String: String] = [:]
        let select = try database.prepare("SELECT value FROM meta WHERE key = ?")
        for key in keys {
            try select.query([.text(key)]) { row in values[key] = row.string(0) }
        }
        return values
    }
}
