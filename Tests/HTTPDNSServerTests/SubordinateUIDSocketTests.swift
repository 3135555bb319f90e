import Foundation
import Glibc
import HTTPDNSTestSupport
import Testing

/// Subordinate uids against the real daemon: processes in a user namespace whose uids are mapped
/// from `/etc/subuid`'s ranges (as newuidmap maps a rootless container's) reach the daemon with
/// those uids, and count against their owner's bounds. The daemon runs in a private mount
/// namespace whose /etc/subuid is the test's.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root for user and mount namespaces"))
struct SubordinateUIDSocketTests {
    static let script = BuiltProducts.packageRoot + "/Tests/attack/subuids.py"

    static func daemon(subuid: String, config: String) throws -> (DaemonHarness, String) {
        let directory = TemporaryDirectory(prefix: "subuid")
        let file = directory.file("subuid")
        try subuid.write(toFile: file, atomically: false, encoding: .utf8)
        let launcher = [
            "/usr/bin/unshare", "-m", "/bin/sh", "-c", #"mount --bind "$0" /etc/subuid && exec "$@""#, file,
        ]
        let daemon = try DaemonHarness(config: config, directory: directory, launcher: launcher)
        _ = try daemon.connectReady()
        _ = try directory.shareWithAllUsers()
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: daemon.socketPath)
        return (daemon, file)
    }

    /// `count` connections from uids `first`, `first + 1`, ... held for `hold` seconds: each
    /// line says "I ok" or "I refused MESSAGE".
    static func connect(_ daemon: DaemonHarness, first: Int, count: Int, hold: Double = 4) throws -> [String] {
        let result = try runCommand(
            "/usr/bin/python3", [script, daemon.socketPath, "\(first)", "\(count)", "\(hold)"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// Five uids of one person's range past a cap of four connections per user: the fifth is
    /// refused as that person's fifth connection; another person's range has its own four; a
    /// range the file gives to nobody is four uids of their own.
    @Test func subordinateUidsShareTheirOwnersConnections() throws {
        let (daemon, _) = try Self.daemon(
            subuid: "root:100000:65536\n1000:165536:65536\n", config: "[Server]\nMaxConnectionsPerUser=4\n")
        let lines = try Self.connect(daemon, first: 100_000, count: 5)
        #expect(lines.prefix(4).allSatisfy { $0.hasSuffix(" ok") }, "\(lines)")
        #expect(lines.last?.hasPrefix("4 refused") == true && lines.last?.contains("connections of one user") == true)
        #expect(try Self.connect(daemon, first: 165_536, count: 4).allSatisfy { $0.hasSuffix(" ok") })
        #expect(try Self.connect(daemon, first: 300_000, count: 5).allSatisfy { $0.hasSuffix(" ok") })
    }

    /// A range added to the file while the daemon runs counts from the next second on, as
    /// `usermod --add-subuids` would add it.
    @Test func aChangedFileIsReadAgain() throws {
        let (daemon, file) = try Self.daemon(subuid: "", config: "[Server]\nMaxConnectionsPerUser=2\n")
        #expect(try Self.connect(daemon, first: 200_000, count: 3, hold: 2).allSatisfy { $0.hasSuffix(" ok") })
        // Written in place: the daemon sees the file through a bind mount of this inode.
        let handle = try #require(FileHandle(forWritingAtPath: file))
        handle.write(Data("root:200000:65536\n".utf8))
        try handle.close()
        usleep(1_200_000)
        let lines = try Self.connect(daemon, first: 200_000, count: 3, hold: 2)
        #expect(lines.last?.hasPrefix("2 refused") == true, "\(lines)")
    }
}
