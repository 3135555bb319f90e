import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

struct HTTPDNSConnectionTests {
    static let localhost = ResolveResult(
        host: "localhost", ipv4: ["127.0.0.1"], ipv6: ["::1"], ttl: 0, stale: false, source: .system)

    @Test func callSendsOneRequestAndReturnsItsResult() throws {
        let server = try FakeRPCServer { request, _ in
            request.method == "resolve" ? .result(Self.localhost.json) : .error(.methodNotFound(request.method))
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        let result = try connection.resolve(host: "localhost", family: .ipv4)
        #expect(result == Self.localhost)
        let received = server.receivedRequests
        try #require(received.count == 1)
        #expect(received[0].method == "resolve")
        #expect(received[0].params["host"] == "localhost")
        #expect(received[0].params["family"] == "ipv4")
        #expect(received[0].id != nil)
    }

    @Test func eachCallGetsAFreshIdOnOneConnection() throws {
        let server = try FakeRPCServer { _, _ in .result(["flushed": 0]) }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        for _ in 0..<3 { _ = try connection.flushCache() }
        let ids = server.receivedRequests.compactMap(\.id)
        #expect(ids.count == 3)
        #expect(Set(ids).count == 3)
        #expect(server.acceptedConnections == 1)
    }

    @Test func pipelinedRepliesAreMatchedByIdWhateverTheirOrder() throws {
        let server = try FakeRPCServer { connection in
            var requests: [RPCRequest] = []
            while requests.count < 3, let request = connection.readRequest() { requests.append(request) }
            // A reply to an id the client never used, then the three in reverse order.
            connection.send(Array(#"{"jsonrpc":"2.0","id":999,"result":"stale"}"#.utf8))
            for request in requests.reversed() {
                connection.reply(to: request, .result(.string(request.params["tag"]?.stringValue ?? "")))
            }
            while connection.readRequest() != nil {}
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        let outcomes = try connection.pipeline([
            ("status", ["tag": "a"]), ("status", ["tag": "b"]), ("status", ["tag": "c"]),
        ])
        #expect(outcomes.map { try? $0.get() } == ["a", "b", "c"])
    }

    @Test func oneFailedRequestOfAPipelineLeavesTheOthers() throws {
        let server = try FakeRPCServer { request, _ in
            request.params["fail"] == true ? .error(.hostNotFound("x.example", reason: .noSuchName)) : .result("ok")
        }
        defer { server.stop() }
        let outcomes = try HTTPDNSConnection(socketPath: server.socketPath).pipeline([
            ("resolve", ["fail": true]), ("resolve", [:]),
        ])
        #expect(outcomes[0] == .failure(.hostNotFound("x.example", reason: .noSuchName)))
        #expect(outcomes[1] == .success("ok"))
    }

    @Test func reconnectsOnceWhenTheDaemonClosedBeforeAnswering() throws {
        let server = try FakeRPCServer { _, connectionIndex in
            connectionIndex == 0 ? .closeConnection : .result(["flushed": 2])
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        #expect(try connection.flushCache() == 2)
        #expect(server.acceptedConnections == 2)
        #expect(server.receivedRequests.count == 2)
    }

    @Test func reconnectsOnceOnAnIdleConnectionTheDaemonDropped() throws {
        let server = try FakeRPCServer { connection in
            // Answers one request, then closes, as a daemon exiting idle would.
            if let request = connection.readRequest() { connection.reply(to: request, .result(["flushed": 1])) }
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        #expect(try connection.flushCache() == 1)
        #expect(try connection.flushCache() == 1)
        #expect(server.acceptedConnections == 2)
    }

    @Test func neverReconnectsTwice() throws {
        let server = try FakeRPCServer { _, _ in .closeConnection }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        #expect(throws: ClientError.connectionClosed(socketPath: server.socketPath)) {
            try connection.status()
        }
        #expect(server.acceptedConnections == 2)
    }

    @Test func absentDaemonIsUnreachableWithTheErrno() throws {
        let path = FakeRPCServer.absentSocketPath()
        let connection = HTTPDNSConnection(socketPath: path)
        #expect(throws: ClientError.unreachable(socketPath: path, errno: .noSuchFileOrDirectory)) {
            try connection.status()
        }
        #expect(
            ClientError.unreachable(socketPath: path, errno: .noSuchFileOrDirectory).description
                == "cannot connect to \(path): No such file or directory")
    }

    @Test func daemonErrorsKeepCodeMessageAndName() throws {
        let server = try FakeRPCServer { _, _ in .error(.invalidParams(field: "host", "is required")) }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        do {
            _ = try connection.resolve(host: "")
            Issue.record("expected an error")
        } catch {
            guard case .rpc(let rpcError) = error else {
                Issue.record("expected .rpc, got \(error)")
                return
            }
            #expect(rpcError.code == .invalidParams)
            #expect(rpcError.name == "InvalidParams")
            #expect(rpcError.data["field"] == "host")
            #expect(error.description == "Invalid params: host: is required (InvalidParams)")
        }
    }

    @Test(arguments: [
        "this is not json",
        #"{"jsonrpc":"2.0","id":1}"#,
        #"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        #"[1,2]"#,
    ])
    func repliesThatAreNotResponsesAreMalformed(line: String) throws {
        let server = try FakeRPCServer { _, _ in .rawLine(line) }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        #expect {
            try connection.call("status")
        } throws: { error in
            guard let error = error as? ClientError, case .malformedResponse = error else { return false }
            return true
        }
    }

    @Test func aResultThatBreaksTheContractIsMalformed() throws {
        let server = try FakeRPCServer { _, _ in .result(["host": "localhost"]) }
        defer { server.stop() }
        #expect(throws: ClientError.malformedResponse("the resolve result does not match the contract")) {
            try HTTPDNSConnection(socketPath: server.socketPath).resolve(host: "localhost")
        }
    }

    @Test func anErrorWithNullIdFailsTheCall() throws {
        let server = try FakeRPCServer { _, _ in
            .rawLine(
                #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"name":"ParseError"}}}"#
            )
        }
        defer { server.stop() }
        #expect {
            try HTTPDNSConnection(socketPath: server.socketPath).call("status")
        } throws: { error in
            guard let error = error as? ClientError, case .rpc(let rpcError) = error else { return false }
            return rpcError.code == .parseError
        }
    }

    @Test func silenceUntilTheDeadlineIsATimeoutAndTheNextCallStartsAfresh() throws {
        let server = try FakeRPCServer { request, connectionIndex in
            connectionIndex == 0 ? .noReply : .result(["flushed": 3])
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath, timeoutMilliseconds: 50)
        #expect(throws: ClientError.timeout(socketPath: server.socketPath, milliseconds: 50)) {
            try connection.flushCache()
        }
        #expect(!connection.isConnected)
        #expect(try connection.flushCache() == 3)
    }

    @Test func typedWrappersSendTheContractsParams() throws {
        let server = try FakeRPCServer { request, _ in
            switch request.method {
            case "getCookieHeader": return .result(["header": "sid=abc", "count": 1])
            case "handleSetCookie":
                return .result([
                    "host": "a.example.com", "stored": 1, "rejected": [["index": 1, "reason": "public-suffix"]],
                ])
            case "deleteCookies": return .result(["deleted": 4])
            case "listCookies": return .result(["cookies": []])
            case "importCookies": return .result(["imported": 2])
            case "exportCookies": return .result(["data": "# Netscape HTTP Cookie File\n"])
            default: return .error(.methodNotFound(request.method))
            }
        }
        defer { server.stop() }
        let connection = HTTPDNSConnection(socketPath: server.socketPath)
        #expect(try connection.cookieHeader(url: "https://203.0.113.1/", host: "a.example.com").header == "sid=abc")
        let stored = try connection.handleSetCookie(
            url: "https://a.example.com/", setCookie: ["a=1", "b=2; Domain=com"])
        #expect(stored.rejected == [.init(index: 1, reason: "public-suffix")])
        #expect(try connection.deleteCookies(DeleteCookiesParams(target: .all, name: "sid")) == 4)
        #expect(try connection.listCookies(domain: "example.com").isEmpty)
        #expect(try connection.importCookies(netscape: "x") == 2)
        #expect(try connection.exportCookies() == "# Netscape HTTP Cookie File\n")

        let params = server.receivedRequests.map(\.params)
        #expect(params[0]["url"] == "https://203.0.113.1/")
        #expect(params[0]["host"] == "a.example.com")
        #expect(params[1]["setCookie"] == ["a=1", "b=2; Domain=com"])
        #expect(params[2]["all"] == true)
        #expect(params[2]["name"] == "sid")
        #expect(params[3]["domain"] == "example.com")
        #expect(params[4]["format"] == "netscape")
        #expect(params[4]["data"] == "x")
        #expect(params[5]["format"] == "netscape")
    }
}
