import Foundation
import Glibc
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// A child on fds 3 and 4 that cannot outlive the thread that started it, and the tree removal
/// that cleans up after it.
struct TiedChildTests {
    /// Reads from `fd` until a newline arrives or 10 s pass.
    static func readLine(_ fd: FileDescriptor) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        _ = eventually(10, every: 10) {
            if case .success(.done(let count)) = chunk.withUnsafeMutableBytes({ raw in
                Result { () throws(SystemError) in try fd.read(into: raw) }
            }) {
                bytes += chunk[..<count]
            }
            return bytes.contains(0x0A)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func theChildReadsFdThreeAndWritesFdFour() throws {
        let child = try TiedChild.spawn(
            "/bin/sh", ["-c", "read line <&3; echo \"got $line\" >&4"], environment: ["PATH=/usr/bin:/bin"])
        try child.input.writeAll(Array("hello\n".utf8))
        #expect(Self.readLine(child.output) == "got hello\n")
        #expect(child.exits(within: 10_000))
        child.input.close()
        child.output.close()
    }

    @Test func anExecFailureIsThrownWithItsErrno() {
        #expect(throws: SystemError(errno: Errno(rawValue: ENOENT), call: "execve /nonexistent/browser")) {
            try TiedChild.spawn("/nonexistent/browser", [], environment: [])
        }
    }

    /// PR_SET_PDEATHSIG follows the thread that forked: when it ends, the kernel kills the child.
    @Test func theChildDiesWithTheThreadThatStartedIt() throws {
        let started = Mutex<TiedChild?>(nil)
        let thread = spawnThread(joinable: true) {
            let child = try? TiedChild.spawn("/bin/sleep", ["60"], environment: [])
            started.withLock { $0 = child }
        }
        pthread_join(thread, nil)
        let child = try #require(started.withLock { $0 })
        #expect(child.exits(within: 10_000), "the child outlived the thread that started it")
        child.input.close()
        child.output.close()
    }

    @Test func removeTreeRemovesLinksNotWhatTheyPointTo() throws {
        let outside = TemporaryDirectory(prefix: "keep")
        try "kept".write(toFile: outside.file("file"), atomically: true, encoding: .utf8)
        let tree = TemporaryDirectory(prefix: "tree")
        try Files.createDirectory(tree.file("sub"))
        try "x".write(toFile: tree.file("sub/file"), atomically: true, encoding: .utf8)
        #expect(symlink(outside.path, tree.file("sub/link")) == 0)
        Files.removeTree(tree.path)
        #expect(!Files.exists(tree.path))
        #expect(Files.exists(outside.file("file")))
    }
}
