import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The wire contract over a real socket, against the real daemon under systemd-socket-activate.
@Suite(.serialized)
struct ProtocolTests {
    @Test func readyIsSentOnceServingAndStatusAnswers() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        let response = try #require(try client.call("status"))
        #expect(response["jsonrpc"] == "2.0")
        #expect(response["id"] == .int(1))
        #expect(response["result"]?["version"]?.stringValue?.isEmpty == false)
        #expect(response["result"]?["uptime"]?.numberValue != nil)
        #expect(daemon.notify.received.contains { $0.contains("STATUS=") })
    }

    @Test func idsAreEchoedExactlyAsWritten() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        for id in [#""abc""#, "7", "1.5", "1e3", "-0", #""""#, "null"] {
            try client.sendLine(#"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"#)
            let line = try #require(client.readLine())
            #expect(line.hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"result":"#), "id \(id): \(line)")
        }
    }

    @Test func parseErrorHasNullID() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        for garbage in ["garbage", "{\"jsonrpc\":", "{\"a\":1}}", "[1,2", "\u{7F}"] {
            try client.sendLine(garbage)
            let response = try #require(client.readJSON())
            #expect(response["error"]?["code"] == .int(-32700), "\(garbage)")
            #expect(response["id"] == .null)
            #expect(response["error"]?["data"]?["name"] == "ParseError")
        }
    }

    @Test func invalidRequests() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        let cases: [(String, JSON)] = [
            (#"{"id":1,"method":"status"}"#, .int(1)),  // no jsonrpc member
            (#"{"jsonrpc":"1.0","id":2,"method":"status"}"#, .int(2)),
            (#"{"jsonrpc":"2.0","id":3,"method":7}"#, .int(3)),
            (#"{"jsonrpc":"2.0","id":{},"method":"status"}"#, .null),
            (#"{"jsonrpc":"2.0","id":4,"method":"status","params":"x"}"#, .int(4)),
            ("42", .null),
            ("[]", .null),
        ]
        for (line, id) in cases {
            try client.sendLine(line)
            let response = try #require(client.readJSON(), "no answer to \(line)")
            #expect(response["error"]?["code"] == .int(-32600), "\(line) -> \(response.encodedString)")
            #expect(response["id"] == id, "\(line)")
            #expect(response["error"]?["message"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func unknownMethodAndPositionalParams() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        try client.sendLine(#"{"jsonrpc":"2.0","id":"m","method":"noSuchMethod","params":{}}"#)
        let missing = try #require(client.readJSON())
        #expect(missing["error"]?["code"] == .int(-32601))
        #expect(missing["error"]?["data"]?["name"] == "MethodNotFound")
        #expect(missing["id"] == "m")

        try client.sendLine(#"{"jsonrpc":"2.0","id":5,"method":"status","params":[1]}"#)
        let positional = try #require(client.readJSON())
        #expect(positional["error"]?["code"] == .int(-32602))
        #expect(positional["error"]?["data"]?["field"] == "params")
    }

    @Test func blankLinesAndCRLFAndNotifications() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        // A notification gets no response; blank lines are ignored; \r\n is a line end.
        try client.send(
            "\n  \n" + #"{"jsonrpc":"2.0","method":"status"}"# + "\r\n" + #"{"jsonrpc":"2.0","id":9,"method":"status"}"#
                + "\r\n")
        let response = try #require(client.readJSON())
        #expect(response["id"] == .int(9))
        #expect(client.readLine(timeout: 0.3) == nil)
    }

    @Test func batches() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        try client.sendLine(
            #"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","method":"status"},"#
                + #"{"jsonrpc":"2.0","id":"x","method":"nope"},7]"#)
        let batch = try #require(client.readJSON()?.arrayValue)
        #expect(batch.count == 3)
        let byID = Dictionary(uniqueKeysWithValues: batch.map { ($0["id"]?.encodedString ?? "?", $0) })
        #expect(byID["1"]?["result"] != nil)
        #expect(byID[#""x""#]?["error"]?["code"] == .int(-32601))
        #expect(byID["null"]?["error"]?["code"] == .int(-32600))

        // A batch of notifications only produces no line at all.
        try client.sendLine(#"[{"jsonrpc":"2.0","method":"status"},{"jsonrpc":"2.0","method":"status"}]"#)
        try client.sendLine(#"{"jsonrpc":"2.0","id":"after","method":"status"}"#)
        #expect(client.readJSON()?["id"] == "after")
    }

    @Test func oversizedLineIsRejectedThenClosed() throws {
        let daemon = try DaemonHarness(config: "[Server]\nMaxLineLength=1K\n")
        let client = try daemon.connectReady()
        try client.sendLine(#"{"jsonrpc":"2.0","id":1,"method":"status"}"#)
        #expect(client.readJSON()?["id"] == .int(1))
        try? client.send(String(repeating: "x", count: 4096))
        let response = try #require(client.readJSON())
        #expect(response["error"]?["code"] == .int(-32600))
        #expect(response["id"] == .null)
        #expect(client.readLine(timeout: 5) == nil)
        #expect(client.reachedEOF)
        // The daemon is still there for others.
        let other = try daemon.connect()
        #expect(try other.call("status")?["result"] != nil)
    }

    @Test func socatFromTheShell() throws {
        let daemon = try DaemonHarness()
        _ = try daemon.connectReady()
        let result = try runCommand(
            "/bin/sh",
            [
                "-c",
                #"printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"status"}' | socat -t 30 - UNIX-CONNECT:"$0""#,
                daemon.socketPath,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let response = try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(response["id"] == .int(1))
        #expect(response["result"]?["version"] != nil)
    }

    @Test func sigtermSendsStoppingAndExitsZero() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0, "log: \(daemon.log)")
        #expect(daemon.notify.waitFor("STOPPING=1", timeout: 2))
        let ready = try #require(daemon.notify.indexOf("READY=1"))
        let stopping = try #require(daemon.notify.indexOf("STOPPING=1"))
        #expect(ready < stopping)
    }

    @Test func rpcDiscoverReturnsTheDocumentByteForByte() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        try client.sendLine(#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#)
        let line = try #require(client.readLine())
        // The file compacted: its JSON written without whitespace (OpenRPCDocumentTests holds the
        // file's own compaction to that).
        let document = try String(
            contentsOfFile: BuiltProducts.packageRoot + "/rpc-schema/httpdnsd.openrpc.json", encoding: .utf8)
        let compact = try JSONParser.parse(document, maxDepth: 128).encodedString
        #expect(line == #"{"jsonrpc":"2.0","id":1,"result":"# + compact + "}")
    }

    @Test func connectionsBeyondTheLimitAreRefusedWithLimitExceeded() throws {
        // One user: past MaxConnections= it still has a reserve of MaxConnectionsPerUser= at most.
        let daemon = try DaemonHarness(config: "[Server]\nMaxConnections=3\nMaxConnectionsPerUser=3\n")
        let held = try (0..<3).map { _ in try daemon.connect() }
        _ = daemon.notify.waitFor("READY=1")
        for client in held { #expect(try client.call("status")?["result"] != nil) }
        let refused = try daemon.connect()
        let response = try #require(refused.readJSON())
        #expect(response["error"]?["code"] == .int(-32003))
        #expect(response["error"]?["data"]?["name"] == "LimitExceeded")
        #expect(response["id"] == .null)
        #expect(refused.readLine(timeout: 2) == nil && refused.reachedEOF)
        // Once one closes, a new connection is served again.
        held[0].shutdownWrite()
        #expect(held[0].readLine(timeout: 2) == nil)
        // The daemon frees the slot as it closes its end; a connection that still came too early
        // is refused with the limit error, so the test tries until one is served.
        #expect(
            try eventually(10) {
                let again = try daemon.connect()
                return try again.call("status")?["result"] != nil
            })
    }

    @Test func oversizedBatchesAreALimitError() throws {
        let daemon = try DaemonHarness(config: "[Server]\nMaxBatch=4\n")
        let client = try daemon.connectReady()
        let element = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#
        try client.sendLine("[" + Array(repeating: element, count: 5).joined(separator: ",") + "]")
        let response = try #require(client.readJSON())
        #expect(response["error"]?["code"] == .int(-32003))
        try client.sendLine("[" + Array(repeating: element, count: 4).joined(separator: ",") + "]")
        #expect(client.readJSON()?.arrayValue?.count == 4)
    }
}
