import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport

/// Requests as uid 65534 on one connection of its own (`setpriv ... socat`), for tests where
/// another user acts on a daemon the test talks to as root.
extension OtherUser {
    /// Lets uid 65534 reach the daemon's socket.
    static func admit(_ daemon: DaemonHarness) throws {
        _ = try daemon.directory.shareWithAllUsers()
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: daemon.socketPath)
    }

    static func arguments(_ daemon: DaemonHarness) -> [String] {
        [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", socat, "-t", "30", "-",
            "UNIX-CONNECT:\(daemon.socketPath)",
        ]
    }

    static func lines(_ requests: [(method: String, params: JSON)]) -> String {
        requests.enumerated().map { index, request in
            JSON.object([
                "jsonrpc": "2.0", "id": .int(index), "method": .string(request.method), "params": request.params,
            ])
            .encodedString + "\n"
        }.joined()
    }

    /// Sends `requests` (ids 0, 1, ...) and returns every response, in id order.
    static func exchange(_ daemon: DaemonHarness, _ requests: [(method: String, params: JSON)]) throws -> [JSON] {
        let result = try runCommand(setpriv, arguments(daemon), stdin: lines(requests), timeout: 60)
        guard result.status == 0 else { throw HarnessError("setpriv socat exited \(result.status): \(result.stderr)") }
        let responses = result.stdout.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
        guard responses.count == requests.count else {
            throw HarnessError("uid \(uid) got \(responses.count) of \(requests.count) responses: \(result.stdout)")
        }
        return responses.sorted { ($0["id"]?.numberValue?.int64Value ?? 0) < ($1["id"]?.numberValue?.int64Value ?? 0) }
    }

    /// One request; its whole response.
    static func call(_ daemon: DaemonHarness, _ method: String, _ params: JSON = [:]) throws -> JSON {
        try exchange(daemon, [(method, params)])[0]
    }

    /// Sends `requests` from a child that keeps its connection open until every response came
    /// (or 30 s passed); the test goes on meanwhile.
    static func start(
        _ daemon: DaemonHarness, _ requests: [(method: String, params: JSON)], in directory: TemporaryDirectory
    ) throws -> ChildProcess {
        let input = directory.file("other-user-requests")
        try lines(requests).write(toFile: input, atomically: true, encoding: .utf8)
        return try ChildProcess(
            setpriv, arguments(daemon), stdin: input, stdout: directory.file("other-user-responses"),
            stderr: directory.file("other-user-stderr"))
    }
}
