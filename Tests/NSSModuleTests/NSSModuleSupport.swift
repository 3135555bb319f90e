import Foundation
import Glibc
import HTTPDNSTestSupport

/// The module as packaging/build-nss links it and the C probe that calls its entry points, built
/// once per test run into the build directory.
struct NSSArtifacts: Sendable {
    /// The directory holding libnss_httpdns.so.2 (what LD_LIBRARY_PATH names).
    let moduleDirectory: String
    let module: String
    let probe: String

    static let shared: Result<NSSArtifacts, HarnessError> = build()

    static func get() throws -> NSSArtifacts { try shared.get() }

    private static func build() -> Result<NSSArtifacts, HarnessError> {
        let root = BuiltProducts.packageRoot
        let directory = BuiltProducts.path("nss-module-tests")
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let link = try runCommand("/bin/sh", [root + "/packaging/build-nss", directory])
            guard link.status == 0 else { return .failure(HarnessError("build-nss failed: \(link.stderr)")) }
            // Searchable by every user (the tests run programs as nobody), whatever the umask was
            // when it was made: an in-process server narrowing it around bind left it 0666 once.
            guard chmod(directory, 0o755) == 0 else {
                return .failure(HarnessError("chmod \(directory): errno \(errno)"))
            }
            let probe = directory + "/nss_probe"
            let compile = try runCommand(
                "/usr/bin/gcc",
                [
                    "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-o", probe, root + "/Tests/nss/nss_probe.c",
                    "-ldl", "-lpthread",
                ])
            guard compile.status == 0 else { return .failure(HarnessError("nss_probe: \(compile.stderr)")) }
            try makeExecutable(probe)
            return .success(
                NSSArtifacts(
                    moduleDirectory: directory, module: directory + "/libnss_httpdns.so.2", probe: probe))
        } catch {
            return .failure(HarnessError("\(error)"))
        }
    }

    /// Runs the probe against the daemon at `socket` (through HTTPDNSD_SOCKET, the module's
    /// override); the output is one line of key=value pairs, or the checks' report.
    func probe(_ arguments: [String], socket: String, timeout: Double = 60) throws -> CommandResult {
        try runCommand(
            probe, [module] + arguments, environment: ["HTTPDNSD_SOCKET": socket, "PATH": "/usr/bin:/bin"],
            timeout: timeout)
    }

    /// One lookup's fields: `status`, `errno`, `h_errno`, `name`, `aliases`, `addresses`, ...
    func lookup(_ arguments: [String], socket: String) throws -> [String: String] {
        let result = try probe(arguments, socket: socket)
        var fields: [String: String] = [:]
        for pair in result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            fields[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        return fields
    }
}

/// A private mount namespace for the programs under test (`unshare -m`): its own
/// /etc/nsswitch.conf and /etc/hosts, a fresh /run (which also hides nscd's socket, so nothing is
/// cached between lookups) with the daemon's socket directory at /run/httpdnsd, and the module on
/// LD_LIBRARY_PATH. Nothing leaks to the host: unshare makes the mounts private.
struct ResolverNamespace {
    let directory: TemporaryDirectory
    let artifacts: NSSArtifacts
    /// The directory bound at /run/httpdnsd (nil: /run/httpdnsd is empty, no daemon).
    let daemonDirectory: String?
    /// Where the programs load the module from: a copy in `directory`, as tests also run them as
    /// uid 65534, which may not reach into a private checkout's build directory.
    let moduleDirectory: String

    static let setupScript = """
        set -e
        mount --bind "$1/nsswitch.conf" /etc/nsswitch.conf
        mount --bind "$1/hosts" /etc/hosts
        mount -t tmpfs -o mode=0755 tmpfs /run
        if [ -d /var/run/nscd ]; then mount -t tmpfs tmpfs /var/run/nscd; fi
        mkdir /run/httpdnsd
        if [ -n "$2" ]; then mount --bind "$2" /run/httpdnsd; fi
        shift 2
        exec "$@"
        """

    init(nsswitchHosts: String, hosts: String, daemonDirectory: String?, artifacts: NSSArtifacts) throws {
        directory = TemporaryDirectory(prefix: "nssns")
        self.artifacts = artifacts
        self.daemonDirectory = daemonDirectory
        _ = try directory.shareWithAllUsers([artifacts.module])
        moduleDirectory = directory.path
        try "hosts: \(nsswitchHosts)\n".write(
            toFile: directory.file("nsswitch.conf"), atomically: true, encoding: .utf8)
        try hosts.write(toFile: directory.file("hosts"), atomically: true, encoding: .utf8)
    }

    /// The command line that runs `program` inside such a namespace (for a daemon's launcher too).
    var launcher: [String] {
        [
            "/usr/bin/unshare", "-m", "--", "/bin/sh", "-c", Self.setupScript, "sh", directory.path,
            daemonDirectory ?? "",
        ]
    }

    /// Runs `program` in the namespace. Only what is given reaches it: no HTTPDNSD_SOCKET, so the
    /// module uses its system socket.
    func run(_ program: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 60)
        throws -> CommandResult
    {
        var variables = ["PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": moduleDirectory, "LC_ALL": "C.UTF-8"]
        variables.merge(environment) { $1 }
        return try runCommand(
            launcher[0], Array(launcher.dropFirst()) + [program] + arguments, environment: variables, timeout: timeout)
    }
}

/// Root runs these: they mount in a private namespace and start daemons.
let runsAsRoot = getuid() == 0
