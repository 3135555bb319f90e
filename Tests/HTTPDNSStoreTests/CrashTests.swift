import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// kill -9 of a process that is writing: every acknowledged commit must be there afterwards, and the
/// database must open cleanly (WAL recovery runs in the next process, as after a real crash).
///
/// The writer is this test binary itself, started again to run only `CrashTests.child`, with the
/// daemon's write path: an event loop, group commit and the store thread.
struct CrashTests {
    static let directoryVariable = "HTTPDNS_STORE_CRASH_DIR"
    static let roundVariable = "HTTPDNS_STORE_CRASH_ROUND"
    /// The child writes one line per acknowledged commit to this descriptor.
    static let ackFD: Int32 = 3

    @Test func acknowledgedCommitsSurviveSIGKILL() throws {
        let directory = TemporaryDirectory()
        var acknowledged: [String: String] = [:]  // cookie name -> value
        for (round, killAfter) in [120, 400, 37, 250].enumerated() {
            let lines = try Self.runChildAndKill(directory: directory.path, round: round, afterAcks: killAfter)
            #expect(lines.count >= killAfter)
            for line in lines {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                if parts.count == 2 { acknowledged[parts[0]] = parts[1] }
            }
            // The next process finds a sound database (open runs quick_check) holding every acknowledged write.
            let store = try StoreFixtures.open(directory)
            let jars = try store.loadJars(bootID: StoreFixtures.bootA, now: StoreFixtures.now)
            store.close()
            var stored: [String: String] = [:]
            for cookie in jars.values.joined() { stored[cookie.name] = cookie.value }
            let missing = acknowledged.filter { stored[$0.key] != $0.value }
            #expect(missing.isEmpty, "round \(round): \(missing.count) acknowledged writes lost")
        }
    }

    /// The writer process: four clients that each commit, wait for the acknowledgement, report it
    /// (every other one through a batch with nothing to write) and commit again, until the
    /// process is killed. Even rounds commit on the loop thread when the
    /// store is idle, odd rounds never. Runs only when started by
    /// `acknowledgedCommitsSurviveSIGKILL`.
    @Test(.enabled(if: getenv(directoryVariable) != nil))
    func child() throws {
        let directory = String(cString: getenv(Self.directoryVariable))
        let round = getenv(Self.roundVariable).map { Int(String(cString: $0)) ?? 0 } ?? 0
        let loop = try EventLoop()
        let store = try SQLiteStateStore.open(directory: directory, resetOnCorruption: false, log: { _ in })
        _ = try store.loadJars(bootID: StoreFixtures.bootA, now: StoreFixtures.now)
        let commits = StateGroupCommit(
            loop: loop, storeThread: StoreThread(StateStores(store)), commitsOnLoopThread: round % 2 == 0)
        var next = [Int](repeating: 0, count: 4)
        func write(client: Int) {
            let index = next[client]
            next[client] += 1
            let name = "r\(round)-t\(client)-\(index % 500)"
            let value = "v\(index)"
            let cookie = StoreFixtures.cookie(
                name, value: value, expires: index % 3 == 0 ? nil : StoreFixtures.now + 9_999)
            func acknowledge() {
                let line = Array("\(name) \(value)\n".utf8)  // one write, shorter than PIPE_BUF: atomic
                _ = line.withUnsafeBytes { Glibc.write(Self.ackFD, $0.baseAddress, $0.count) }
            }
            let byRenewal = index % 2 == 1
            commits.commit(StoreFixtures.upserts(UInt32(client), [cookie])) { result in
                if case .success = result, !byRenewal { acknowledge() }
                write(client: client)
            }
            guard byRenewal else { return }
            // Every other write is acknowledged the way a renewal of the cookie just set is: by a
            // batch with nothing to write, handed in on the next turn, while the write's own
            // transaction may still run.
            loop.schedule(afterMilliseconds: 0) {
                commits.commit(StateBatch(uid: UInt32(client), changes: [])) { result in
                    if case .success = result { acknowledge() }
                }
            }
        }
        loop.schedule(afterMilliseconds: 0) { for client in 0..<4 { write(client: client) } }
        loop.run()
    }

    /// Starts the child, reads acknowledgements until `afterAcks`, kills it with SIGKILL, and returns
    /// every acknowledgement it wrote.
    static func runChildAndKill(directory: String, round: Int, afterAcks: Int) throws -> [String] {
        var pipeFDs: [Int32] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        let (readFD, writeFD) = (pipeFDs[0], pipeFDs[1])
        defer { close(readFD) }
        // Only the copy made for the child (fd 3) may stay open in it: the read end must not, or
        // the child's death would never show as end of file.
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var executable = [UInt8](repeating: 0, count: 4096)
        let length = executable.withUnsafeMutableBytes { raw in
            readlink("/proc/self/exe", raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count - 1)
        }
        try #require(length > 0)
        var environment = [directoryVariable: directory, roundVariable: "\(round)"]
        if let path = getenv("LD_LIBRARY_PATH") { environment["LD_LIBRARY_PATH"] = String(cString: path) }
        let child = try ChildProcess(
            String(decoding: executable[0..<length], as: UTF8.self),
            ["--testing-library", "swift-testing", "--filter", "CrashTests/child"], environment: environment,
            stdout: "/dev/null", stderr: "/dev/null", inheriting: writeFD, as: ackFD)
        close(writeFD)

        var lines: [String] = []
        var pending: [UInt8] = []
        var killed = false
        let deadline = MonotonicClock.nowMilliseconds() + 120_000
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if !killed && (lines.count >= afterAcks || MonotonicClock.nowMilliseconds() > deadline) {
                child.signal(SIGKILL)
                killed = true
            }
            var entry = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1_000) >= 0 || errno == EINTR else { break }
            guard entry.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if count <= 0 { break }  // EOF: the child (the only writer) is gone
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
        }
        #expect(child.wait(timeout: 10) == 128 + SIGKILL, "the child exited before it was killed")
        return lines
    }
}
