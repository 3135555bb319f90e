import Dispatch
import Glibc
import HTTPDNSCore
import Testing

@testable import HTTPDNSSQLite

/// kill -9 of a process that is writing: every acknowledged commit must be there afterwards, and the
/// database must open cleanly (WAL recovery runs in the next process, as after a real crash).
///
/// The writer is this test binary itself, started again to run only `CrashTests.child`.
struct CrashTests {
    static let directoryVariable = "HTTPDNS_STORE_CRASH_DIR"
    static let ackVariable = "HTTPDNS_STORE_CRASH_ACK_FD"

    @Test func acknowledgedCommitsSurviveSIGKILL() throws {
        let directory = TemporaryDirectory()
        var acknowledged: [String: String] = [:]  // cookie name -> value
        for (round, killAfter) in [120, 400, 37].enumerated() {
            let lines = try Self.runChildAndKill(directory: directory.path, round: round, afterAcks: killAfter)
            #expect(lines.count >= killAfter)
            for line in lines {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                if parts.count == 2 { acknowledged[parts[0]] = parts[1] }
            }
            // The next process finds a sound database (open runs quick_check) holding every acknowledged write.
            let store = try StoreFixtures.open(directory)
            let jars = try store.loadCookies(bootID: StoreFixtures.bootA, now: StoreFixtures.now)
            store.close()
            var stored: [String: String] = [:]
            for cookie in jars.values.joined() { stored[cookie.name] = cookie.value }
            let missing = acknowledged.filter { stored[$0.key] != $0.value }
            #expect(missing.isEmpty, "round \(round): \(missing.count) acknowledged writes lost")
        }
    }

    /// The writer process: commits from four threads and reports each acknowledged commit on a pipe
    /// until it is killed. Runs only when started by `acknowledgedCommitsSurviveSIGKILL`.
    @Test(.enabled(if: ProcessEnvironmentForTests.value(directoryVariable) != nil))
    func child() throws {
        let directory = try #require(ProcessEnvironmentForTests.value(Self.directoryVariable))
        let ackFD = try #require(ProcessEnvironmentForTests.value(Self.ackVariable).flatMap { Int32($0) })
        let round = ProcessEnvironmentForTests.value("HTTPDNS_STORE_CRASH_ROUND") ?? "0"
        let store = try StateStore.open(directory: directory, resetOnCorruption: false, log: { _ in })
        _ = try store.loadCookies(bootID: StoreFixtures.bootA, now: StoreFixtures.now)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var index = 0
            while true {
                let name = "r\(round)-t\(thread)-\(index % 500)"
                let value = "v\(index)"
                let cookie = StoreFixtures.cookie(
                    name, value: value, expires: index % 3 == 0 ? nil : StoreFixtures.now + 9_999)
                if case .success = store.commitAndWait([(uid: UInt32(thread), change: .upsert(cookie))]) {
                    let line = Array("\(name) \(value)\n".utf8)  // one write, shorter than PIPE_BUF: atomic
                    _ = line.withUnsafeBytes { write(ackFD, $0.baseAddress, $0.count) }
                }
                index += 1
            }
        }
    }

    /// Starts the child, reads acknowledgements until `afterAcks`, kills it with SIGKILL, and returns
    /// every acknowledgement it wrote.
    static func runChildAndKill(directory: String, round: Int, afterAcks: Int) throws -> [String] {
        var pipeFDs: [Int32] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        let (readFD, writeFD) = (pipeFDs[0], pipeFDs[1])
        defer { close(readFD) }
        _ = fcntl(readFD, F_SETFD, FD_CLOEXEC)

        var executable = [UInt8](repeating: 0, count: 4096)
        let length = executable.withUnsafeMutableBytes { raw in
            readlink("/proc/self/exe", raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count - 1)
        }
        try #require(length > 0)
        let arguments = [
            String(decoding: executable[0..<length], as: UTF8.self), "--testing-library", "swift-testing", "--filter",
            "CrashTests/child",
        ]
        var environment = [
            "\(directoryVariable)=\(directory)", "\(ackVariable)=\(writeFD)", "HTTPDNS_STORE_CRASH_ROUND=\(round)",
        ]
        if let path = ProcessEnvironmentForTests.value("LD_LIBRARY_PATH") {
            environment.append("LD_LIBRARY_PATH=\(path)")
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let spawned = withCStrings(arguments) { argv in
            withCStrings(environment) { envp in posix_spawn(&pid, argv[0]!, &actions, nil, argv, envp) }
        }
        close(writeFD)
        #expect(spawned == 0)
        guard spawned == 0 else { return [] }

        var lines: [String] = []
        var pending: [UInt8] = []
        var killed = false
        let deadline = monotonicSeconds() + 120
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if !killed && (lines.count >= afterAcks || monotonicSeconds() > deadline) {
                kill(pid, SIGKILL)
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
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(killed, "the child exited before it was killed")
        return lines
    }

    static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }

    static func monotonicSeconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec
    }
}

enum ProcessEnvironmentForTests {
    static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
