import Dispatch
import Glibc
import HTTPDNSCore
import Synchronization
import Testing

@testable import HTTPDNSSQLite

/// A fresh directory under /tmp, removed (with the files in it) when the test is done.
final class TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/httpdnsd-store-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { buffer in
            guard let made = mkdtemp(buffer.baseAddress!) else { preconditionFailure("mkdtemp failed") }
            return String(cString: made)
        }
    }

    deinit { Self.removeTree(path) }

    var databasePath: String { "\(path)/httpdnsd.sqlite3" }

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

    static func removeTree(_ path: String) {
        if let directory = opendir(path) {
            var names: [String] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(directory)
            for name in names where unlink("\(path)/\(name)") != 0 { removeTree("\(path)/\(name)") }
        }
        rmdir(path)
    }
}

/// Log lines captured in memory.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])
    var sink: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
    var all: [String] { lines.withLock { $0 } }
}

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

    static func open(_ directory: TemporaryDirectory, reset: Bool = false, log: CapturedLog = CapturedLog())
        throws(StoreError) -> StateStore
    {
        try StateStore.open(directory: directory.path, resetOnCorruption: reset, log: log.sink)
    }
}

extension StateStore {
    /// `commit`, waiting for the completion (tests only; the daemon never blocks on it).
    func commitAndWait(_ changes: [(uid: UInt32, change: CookieChange)]) -> Result<Void, StoreError> {
        let answer = Rendezvous<Result<Void, StoreError>>()
        commit(changes) { answer.fulfill($0) }
        return answer.wait()
    }

    func saveDNSAndWait(entries: [PersistedDNSEntry], owners: [PersistedAddressOwner]) -> Result<Void, StoreError> {
        let answer = Rendezvous<Result<Void, StoreError>>()
        saveDNS(entries: entries, owners: owners) { answer.fulfill($0) }
        return answer.wait()
    }

    /// Runs `body` with the writer's connection and waits for it.
    func onWriter<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) -> T) -> T {
        let answer = Rendezvous<T>()
        enqueueOnWriter { answer.fulfill(body($0)) }
        return answer.wait()
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Counts completions from many threads and lets a test wait for a number of them.
final class CompletionCounter: Sendable {
    private let group = DispatchGroup()
    private let failures = Mutex<[StoreError]>([])

    func expect(_ count: Int) { for _ in 0..<count { group.enter() } }

    var completion: @Sendable (Result<Void, StoreError>) -> Void {
        { result in
            if case .failure(let error) = result { self.failures.withLock { $0.append(error) } }
            self.group.leave()
        }
    }

    /// True if every expected completion arrived within `seconds`.
    func wait(seconds: Int = 60) -> Bool { group.wait(timeout: .now() + .seconds(seconds)) == .success }

    var errors: [StoreError] { failures.withLock { $0 } }
}

/// Raw file access for damaging databases on purpose.
enum RawFile {
    static func write(_ path: String, _ bytes: [UInt8], at offset: Int64? = nil) {
        let flags = offset == nil ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY
        let fd = open(path, flags, 0o600)
        precondition(fd >= 0, "open \(path)")
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { raw in
            offset.map { pwrite(fd, raw.baseAddress, raw.count, off_t($0)) }
                ?? Glibc.write(fd, raw.baseAddress, raw.count)
        }
        precondition(written == bytes.count, "write \(path)")
    }

    static func read(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
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
