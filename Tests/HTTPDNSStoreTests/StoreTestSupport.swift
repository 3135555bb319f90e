import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSStore

enum StoreFixtures {
    /// A fixed wall-clock time (2027-01-15), so expiry does not depend on when tests run.
    static let now: Int64 = 1_800_000_000
    static let bootA = "5f0c1f2d7c8e4b5b9a1e3d2c4b6a8f01"
    static let bootB = "9b8a7c6d5e4f40312a1b2c3d4e5f6071"

    static func cookie(
        _ name: String, value: String = "v", domain: String = "example.com", path: String = "/",
        expires: Int64? = now + 3_600, creationIndex: UInt64 = 0
    ) -> Cookie {
        Cookie(
            name: name, value: value, domain: domain, hostOnly: true, path: path, expires: expires, secure: false,
            httpOnly: false, sameSite: .default, partitioned: false, created: now - 10, creationIndex: creationIndex,
            lastAccess: now - 5)
    }

    /// Upserts of `cookies` into the jar of `uid`, as one batch.
    static func upserts(_ uid: UInt32, _ cookies: [Cookie]) -> StateBatch {
        StateBatch(uid: uid, changes: cookies.map { .upsert($0) })
    }

    static func open(_ directory: TemporaryDirectory, reset: Bool = false, log: CapturedLog = CapturedLog())
        throws(StoreError) -> SQLiteStateStore
    {
        try SQLiteStateStore.open(directory: directory.path, resetOnCorruption: reset, log: log.sink)
    }
}

extension TemporaryDirectory {
    var databasePath: String { file("httpdnsd.sqlite3") }

    /// Names of the files in the directory, sorted.
    func fileNames() -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}

extension JarStore {
    /// Commits one batch and returns its result.
    func commitOne(_ batch: StateBatch) -> Result<Void, StoreError> {
        commit([batch])[0]
    }
}

extension SQLiteStateStore {
    /// The open connection (tests reach past the store to damage or limit the file).
    var connection: SQLiteDatabase {
        get throws { try openDatabase() }
    }

    func count(_ sql: String) throws -> Int64 {
        var count: Int64 = -1
        try connection.prepare(sql).query { count = $0.int64(0) }
        return count
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Log lines captured in memory.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])
    var sink: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
    var all: [String] { lines.withLock { $0 } }
}

/// Raw file access for damaging databases on purpose.
enum RawFile {
    static func write(_ path: String, _ bytes: [UInt8], at offset: Int64? = nil) {
        let flags = offset == nil ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "open \(path)")
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { raw in
            offset.map { pwrite(fd, raw.baseAddress, raw.count, off_t($0)) }
                ?? Glibc.write(fd, raw.baseAddress, raw.count)
        }
        precondition(written == bytes.count, "write \(path)")
    }

    static func read(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return contents }
            contents += chunk[0..<count]
        }
    }

    static func size(_ path: String) -> Int64 {
        var status = stat()
        return stat(path, &status) == 0 ? Int64(status.st_size) : -1
    }
}
