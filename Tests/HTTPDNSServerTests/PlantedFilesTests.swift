import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// Files another user made before the daemon started (httpdnsd(8), FILES): a state directory,
/// a database, a WAL, a symbolic link or a socket at the daemon's paths is refused with a message
/// naming the path and the fix, never used or replaced. Before, a uid that made `/tmp/h-state`
/// (0777) and an empty database owned the files every user's cookies were written to.
@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to make files another user owns"))
struct PlantedFilesTests {
    static let other: uid_t = 65534

    /// The daemon on `stateDirectory` and `socket`, which must refuse to start.
    static func refused(stateDirectory: String, socket: String) throws -> CommandResult {
        try runCommand(
            BuiltProducts.path("httpdnsd"),
            ["--config", "/dev/null", "--state-dir", stateDirectory, "--socket", socket], timeout: 30)
    }

    /// The daemon on `stateDirectory` and `socket` answers a status, then is stopped.
    static func serves(stateDirectory: String, socket: String, in directory: TemporaryDirectory) throws -> Bool {
        let log = directory.file("daemon.log")
        let daemon = try ChildProcess(
            BuiltProducts.path("httpdnsd"),
            ["--config", "/dev/null", "--state-dir", stateDirectory, "--socket", socket], stdout: log, stderr: log)
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.wait(timeout: 10)
        }
        _ = eventually(20) { UnixSocket.isLive(path: socket) || !daemon.isRunning }
        return try LineClient(path: socket).call("status")?["result"] != nil
    }

    static func makeDirectory(_ path: String, owner: uid_t, mode: mode_t) throws {
        #expect(mkdir(path, mode) == 0)
        #expect(chmod(path, mode) == 0)
        #expect(chown(path, owner, owner) == 0)
    }

    static func makeFile(_ path: String, owner: uid_t) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(), attributes: [.posixPermissions: 0o666]))
        #expect(chown(path, owner, owner) == 0)
    }

    @Test func aStateDirectoryAnotherUserMadeIsRefused() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let state = directory.file("h-state")
        try Self.makeDirectory(state, owner: Self.other, mode: 0o777)
        Self.makeFile(state + "/httpdnsd.sqlite3", owner: Self.other)
        let result = try Self.refused(stateDirectory: state, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(state) is owned by uid 65534"), "\(result.stderr)")
        #expect(result.stderr.contains("--state-dir"), "the message says what to do: \(result.stderr)")
        var status = stat()
        #expect(stat(state + "/httpdnsd.sqlite3", &status) == 0 && status.st_size == 0, "nothing was written")
        #expect(!Files.exists(state + "/httpdnsd.sqlite3-wal"))
    }

    @Test(arguments: ["httpdnsd.sqlite3", "httpdnsd.sqlite3-wal", "httpdnsd.sqlite3-shm", "httpdnsd.lock"])
    func aFileAnotherUserPlantedInTheStateDirectoryIsRefused(_ name: String) throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let state = directory.file("state")
        try Self.makeDirectory(state, owner: 0, mode: 0o700)
        Self.makeFile(state + "/" + name, owner: Self.other)
        let result = try Self.refused(stateDirectory: state, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(state)/\(name) is owned by uid 65534"), "\(result.stderr)")
    }

    @Test func aStateDirectoryWritableByOthersIsRefused() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let state = directory.file("state")
        try Self.makeDirectory(state, owner: 0, mode: 0o777)
        let result = try Self.refused(stateDirectory: state, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(state) is writable by other users (mode 0777)"), "\(result.stderr)")
    }

    @Test func aSymbolicLinkAnotherUserOwnsIsNotFollowed() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let target = directory.file("target")
        try Self.makeDirectory(target, owner: 0, mode: 0o700)
        let link = directory.file("state")
        #expect(symlink(target, link) == 0)
        #expect(lchown(link, Self.other, Self.other) == 0)
        let result = try Self.refused(stateDirectory: link, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(link) is a symbolic link owned by uid 65534"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
    }

    /// A directory above the state directory that another user owns, or that others may write
    /// (a group-writable one too), lets them rename the state directory away and put theirs in
    /// its place: refused, as the review reproduced with an owned 0755 and a root 0775 parent.
    @Test(arguments: [[UInt32(65534), 0o755], [0, 0o775]])
    func aParentOthersControlIsRefused(_ ownerAndMode: [UInt32]) throws {
        let (owner, mode) = (uid_t(ownerAndMode[0]), mode_t(ownerAndMode[1]))
        let directory = TemporaryDirectory(prefix: "planted")
        let parent = directory.file("parent")
        try Self.makeDirectory(parent, owner: owner, mode: mode)
        let state = parent + "/state"
        try Self.makeDirectory(state, owner: 0, mode: 0o700)
        let result = try Self.refused(stateDirectory: state, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("Refusing the state directory: \(parent) is"), "\(result.stderr)")
    }

    /// A root-owned link to a directory another user controls is followed to that directory's
    /// owner check: the daemon's checks are of the directory it opens, never of a name that a
    /// swap could point elsewhere (a race chmod'ed a root directory to 0700 before).
    @Test func aRootLinkToAnotherUsersDirectoryIsRefusedWithoutTouchingIt() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let target = directory.file("theirs")
        try Self.makeDirectory(target, owner: Self.other, mode: 0o755)
        let link = directory.file("state")
        #expect(symlink(target, link) == 0)
        let result = try Self.refused(stateDirectory: link, socket: directory.file("d.sock"))
        #expect(result.status == 1)
        var status = stat()
        #expect(stat(target, &status) == 0 && status.st_mode & 0o777 == 0o755, "its mode is untouched")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
    }

    /// The daemon's own directory that others may only read is made private and used, and a
    /// root-owned link to it is followed (systemd's `StateDirectory=` with `DynamicUser=yes`).
    @Test func itsOwnDirectoryIsMadePrivateAndARootLinkIsFollowed() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let target = directory.file("private-state")
        try Self.makeDirectory(target, owner: 0, mode: 0o755)
        let link = directory.file("state")
        #expect(symlink(target, link) == 0)
        #expect(try Self.serves(stateDirectory: link, socket: directory.file("d.sock"), in: directory))
        var status = stat()
        #expect(stat(target, &status) == 0 && status.st_mode & 0o777 == 0o700)
        #expect(Files.exists(target + "/httpdnsd.sqlite3"))
    }

    /// A socket another user bound at the path (live or not) stays theirs: the daemon refuses
    /// it, so nobody's connections go to a stale file's replacement or to the other user.
    @Test(arguments: [true, false]) func aSocketAnotherUserHoldsIsRefusedNotReplaced(live: Bool) throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let socket = directory.file("d.sock")
        let squatter = try UnixSocket.listen(path: socket)
        defer { squatter.close() }
        if !live { squatter.close() }
        #expect(lchown(socket, Self.other, Self.other) == 0)
        let result = try Self.refused(stateDirectory: directory.file("state"), socket: socket)
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(socket) is a socket of uid 65534"), "\(result.stderr)")
        var status = stat()
        #expect(lstat(socket, &status) == 0 && status.st_uid == Self.other, "the other user's socket is still there")
    }

    @Test func aLiveSocketOfItsOwnUserIsInUse() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let socket = directory.file("d.sock")
        let first = try UnixSocket.listen(path: socket)
        defer { first.close() }
        let result = try Self.refused(stateDirectory: directory.file("state"), socket: socket)
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(socket) is in use"), "\(result.stderr)")
    }

    /// A socket directory another user owns, or one under a directory of theirs (they could move
    /// it away and listen in its place: the review received another user's login that way).
    @Test(arguments: ["", "/run"]) func aSocketDirectoryOfAnotherUsersIsRefused(_ below: String) throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let theirs = directory.file("theirs")
        try Self.makeDirectory(theirs, owner: Self.other, mode: 0o755)
        if !below.isEmpty { try Self.makeDirectory(theirs + below, owner: 0, mode: 0o755) }
        let result = try Self.refused(stateDirectory: directory.file("state"), socket: theirs + below + "/d.sock")
        #expect(result.status == 1)
        #expect(result.stderr.contains("Refusing the socket path: \(theirs) is owned by uid 65534"), "\(result.stderr)")
    }

    /// A sticky directory every user may write (/tmp) is fine for a fresh socket name: nobody
    /// else can remove or replace the daemon's socket there.
    @Test func aFreshNameInAStickyDirectoryIsServed() throws {
        let directory = TemporaryDirectory(prefix: "planted")
        let sticky = directory.file("tmp")
        try Self.makeDirectory(sticky, owner: 0, mode: 0o1777)
        #expect(try Self.serves(stateDirectory: directory.file("state"), socket: sticky + "/h.sock", in: directory))
    }
}
