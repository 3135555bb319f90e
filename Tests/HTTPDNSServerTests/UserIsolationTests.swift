import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Acting as uid 65534 from a test that runs as root.
enum OtherUser {
    static let setpriv = "/usr/bin/setpriv"
    static let socat = "/usr/bin/socat"
    static let uid = 65534

    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
            && FileManager.default.isExecutableFile(atPath: socat)
    }

    static let skipReason: Comment = "needs root, setpriv (util-linux) and socat to act as uid 65534"
}

/// Whose jar (httpdnsd-rpc(7), JARS AND ADDRESS MEMORY): each peer uid has its own jar. The other uid is 65534 (nobody), reached
/// through `setpriv ... socat`, one connection per request so that no two requests race.
@Suite(.serialized, .enabled(if: OtherUser.available, OtherUser.skipReason))
struct UserIsolationTests {
    /// A daemon whose socket uid 65534 may connect to.
    static func start() throws -> RPCSession {
        let rpc = try RPCSession()
        try OtherUser.admit(rpc.daemon)
        return rpc
    }

    /// One request as uid 65534; the result, or a thrown error naming the reply.
    static func asOther(_ rpc: RPCSession, _ method: String, _ params: JSON = [:]) throws -> JSON {
        let request: JSON = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": params]
        let result = try runCommand(
            OtherUser.setpriv,
            [
                "--reuid=\(OtherUser.uid)", "--regid=\(OtherUser.uid)", "--clear-groups", OtherUser.socat, "-t", "10",
                "-",
                "UNIX-CONNECT:\(rpc.daemon.socketPath)",
            ],
            stdin: request.encodedString + "\n")
        guard result.status == 0 else { throw HarnessError("setpriv socat exited \(result.status): \(result.stderr)") }
        let line = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let response = try? JSONParser.parse(line), let value = response["result"] else {
            throw HarnessError("\(method) as uid \(OtherUser.uid) answered: \(line) \(result.stderr)")
        }
        return value
    }

    @Test func anotherUserSeesAndDeletesNothingOfRoot() throws {
        let rpc = try Self.start()
        try rpc.setCookies("https://www.example.com/", ["rootsid=1; Path=/", "rootlang=en; Domain=example.com"])

        let header = try Self.asOther(rpc, "getCookieHeader", ["url": "https://www.example.com/"])
        #expect(header["header"] == "", "uid 65534 read root's cookies: \(header.encodedString)")
        #expect(header["count"] == .int(0))
        #expect(try Self.asOther(rpc, "listCookies")["cookies"] == [])
        #expect(try Self.asOther(rpc, "listCookies", ["domain": "example.com"])["cookies"] == [])
        let exported = try Self.asOther(rpc, "exportCookies", ["format": "netscape"])["data"]?.stringValue
        #expect(exported?.contains("root") == false, "uid 65534 exported root's cookies: \(exported ?? "nil")")
        for target: JSON in [["url": "https://www.example.com/"], ["domain": "example.com"], ["all": true]] {
            let deleted = try Self.asOther(rpc, "deleteCookies", target)["deleted"]
            #expect(deleted == .int(0), "\(target.encodedString) as uid 65534 deleted \(deleted?.encodedString ?? "?")")
        }
        // Overwriting by name from the other uid lands in its own jar, not root's.
        _ = try Self.asOther(
            rpc, "handleSetCookie", ["url": "https://www.example.com/", "setCookie": ["rootsid=hijacked"]])

        #expect(try rpc.header("https://www.example.com/") == "rootsid=1; rootlang=en")
        #expect(CookieResults.names(try rpc.list()) == ["rootlang", "rootsid"])
    }

    @Test func anotherUsersCookiesAreInvisibleToRoot() throws {
        let rpc = try Self.start()
        let stored = try Self.asOther(
            rpc, "handleSetCookie", ["url": "https://www.example.com/", "setCookie": ["theirs=2; Path=/"]])
        #expect(stored["stored"] == .int(1), "\(stored.encodedString)")
        let imported = try Self.asOther(
            rpc, "importCookies", ["format": "netscape", "data": "www.example.com\tFALSE\t/\tFALSE\t0\tfiled\t3\n"])
        #expect(imported["imported"] == .int(1), "\(imported.encodedString)")
        // The channel works: uid 65534 reads its own jar.
        let own = try Self.asOther(rpc, "getCookieHeader", ["url": "https://www.example.com/"])
        #expect(own["header"] == "theirs=2; filed=3", "\(own.encodedString)")

        #expect(try rpc.header("https://www.example.com/") == "")
        #expect(try rpc.list().isEmpty)
        let exported = try #require(try rpc.result("exportCookies", ["format": "netscape"])["data"]?.stringValue)
        #expect(!exported.contains("theirs") && !exported.contains("filed"), "\(exported)")
        #expect(try rpc.deleted(["all": true]) == 0)
        #expect(try rpc.deleted(["domain": "www.example.com"]) == 0)

        let after = try Self.asOther(rpc, "listCookies")["cookies"]?.arrayValue ?? []
        #expect(CookieResults.names(after) == ["filed", "theirs"])
    }
}
