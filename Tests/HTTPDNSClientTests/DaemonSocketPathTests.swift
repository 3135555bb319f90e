import HTTPDNSClient
import Testing

/// The clients' rule (httpdnsd-rpc(7), SOCKETS): `--socket PATH`, else `HTTPDNSD_SOCKET`, else the per-user socket when `XDG_RUNTIME_DIR`
/// is set and the socket exists, else the system socket.
struct DaemonSocketPathTests {
    func resolve(_ explicit: String?, _ environment: [String: String], sockets: Set<String> = []) -> String {
        DaemonSocketPath.resolve(explicit: explicit, environment: { environment[$0] }, isSocket: sockets.contains)
    }

    let userSocket = "/run/user/1000/httpdnsd/httpdnsd.sock"

    @Test func explicitPathWinsOverEverything() {
        let environment = ["HTTPDNSD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(resolve("/flag.sock", environment, sockets: [userSocket]) == "/flag.sock")
    }

    @Test func environmentVariableComesNext() {
        let environment = ["HTTPDNSD_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(resolve(nil, environment, sockets: [userSocket]) == "/env.sock")
    }

    @Test func perUserSocketOnlyWhenItExists() {
        let environment = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(resolve(nil, environment, sockets: [userSocket]) == userSocket)
        #expect(resolve(nil, environment, sockets: []) == "/run/httpdnsd/httpdnsd.sock")
    }

    @Test func systemSocketWhenNothingIsSet() {
        #expect(resolve(nil, [:]) == "/run/httpdnsd/httpdnsd.sock")
    }

    @Test func emptyValuesCountAsUnset() {
        #expect(resolve("", ["HTTPDNSD_SOCKET": "", "XDG_RUNTIME_DIR": ""]) == "/run/httpdnsd/httpdnsd.sock")
    }

    @Test func trailingSlashOfTheRuntimeDirectoryIsNotDoubled() {
        #expect(DaemonSocketPath.perUser(runtimeDirectory: "/run/user/1000/") == userSocket)
    }
}

extension DaemonSocketPathTests {
    @Test func eachStepOfTheRuleNamesItsOrigin() {
        let user = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        let locate = { (explicit: String?, environment: [String: String], sockets: Set<String>) in
            DaemonSocketPath.locate(explicit: explicit, environment: { environment[$0] }, isSocket: sockets.contains)
                .origin
        }
        #expect(locate("/flag.sock", user, [userSocket]) == .explicit)
        #expect(locate(nil, user.merging(["HTTPDNSD_SOCKET": "/env.sock"]) { a, _ in a }, [userSocket]) == .environment)
        #expect(locate(nil, user, [userSocket]) == .perUser)
        #expect(locate(nil, user, []) == .system)
    }
}
