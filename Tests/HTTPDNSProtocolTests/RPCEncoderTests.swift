import HTTPDNSProtocol
import Testing

/// Response objects (JSON-RPC 2.0 section 5) and the contract's error shape (httpdnsd-rpc(7), ERRORS).
struct RPCEncoderTests {
    static func members(_ bytes: [UInt8]) throws -> JSONObject {
        try #require(try JSONParser.parse(bytes).objectValue)
    }

    @Test func resultResponseShape() throws {
        var output = JSONOutput()
        RPCEncoder.writeResult(["header": "a=b\nc", "count": 1], id: .string("r1"), to: &output)
        let out = output.bytes
        #expect(!out.contains(0x0A), "one line, even with a newline inside a value")
        let object = try Self.members(out)
        #expect(Set(object.keys) == ["jsonrpc", "id", "result"])
        #expect(object.count == 3)
        #expect(object["jsonrpc"] == "2.0")
        #expect(object["id"] == "r1")
        #expect(object["result"] == ["header": "a=b\nc", "count": 1])
    }

    @Test func idIsEchoedAsWritten() throws {
        for literal in ["1.0", "1e3", "-0", "12345678901234567890123"] {
            var output = JSONOutput()
            RPCEncoder.writeResult(.null, id: .number(try #require(number(literal).numberValue)), to: &output)
            let out = output.bytes
            let text = String(decoding: out, as: UTF8.self)
            #expect(text.contains(#""id":\#(literal),"#), "\(text)")
            #expect(try Self.members(out)["result"] == .null, "a null result is still a result member")
        }
    }

    @Test func errorResponseShape() throws {
        var output = JSONOutput()
        RPCEncoder.writeError(.invalidParams(field: "host", "is required"), id: .number(JSONNumber(4)), to: &output)
        let out = output.bytes
        let object = try Self.members(out)
        #expect(Set(object.keys) == ["jsonrpc", "id", "error"])
        #expect(object.count == 3)
        #expect(object["id"] == .int(4))
        let error = try #require(object["error"]?.objectValue)
        #expect(error["code"] == .int(-32602))
        #expect(error["message"]?.stringValue?.isEmpty == false)
        #expect(error["data"]?["name"] == "InvalidParams")
        #expect(error["data"]?["field"] == "host")
    }

    @Test func errorWithNullID() throws {
        var output = JSONOutput()
        RPCEncoder.writeError(.parseError("bad\nline"), id: .null, to: &output)
        let out = output.bytes
        #expect(!out.contains(0x0A))
        let object = try Self.members(out)
        #expect(object["id"] == .null)
        #expect(object["error"]?["code"] == .int(-32700))
    }

    @Test func rawResultIsCopiedVerbatim() throws {
        let raw = Array(#"{"openrpc":"1.3.2","methods":[]}"#.utf8)
        var output = JSONOutput()
        RPCEncoder.writeResult(DiscoverResult(encodedDocument: raw), id: .string("d"), to: &output)
        let out = output.bytes
        let text = String(decoding: out, as: UTF8.self)
        #expect(text.contains(#""result":{"openrpc":"1.3.2","methods":[]}"#))
        #expect(try Self.members(out)["result"]?["openrpc"] == "1.3.2")
    }

    @Test func writersAppend() throws {
        var out = JSONOutput()
        out.append(UInt8(ascii: "["))
        RPCEncoder.writeResult(1, id: .null, to: &out)
        out.append(UInt8(ascii: ","))
        RPCEncoder.writeError(.internalError("x"), id: .null, to: &out)
        out.append(UInt8(ascii: "]"))
        #expect(try JSONParser.parse(out.bytes).arrayValue?.count == 2)
    }
}

struct RPCErrorTests {
    static let all: [(RPCError, Int, String)] = [
        (.parseError("x"), -32700, "ParseError"),
        (.invalidRequest("x"), -32600, "InvalidRequest"),
        (.lineTooLong(limit: 1_048_576), -32600, "RequestTooLarge"),
        (.methodNotFound("nope"), -32601, "MethodNotFound"),
        (.invalidParams(field: "host", "is required"), -32602, "InvalidParams"),
        (.internalError("x"), -32603, "InternalError"),
        (.hostNotFound("a.example", reason: .noSuchName), -32001, "HostNotFound"),
        (.resolutionUnavailable("a.example", reason: "timeout"), -32002, "ResolutionUnavailable"),
        (.limitExceeded("cookies", limit: 3), -32003, "LimitExceeded"),
        (.permissionDenied("x"), -32004, "PermissionDenied"),
    ]

    @Test func everyErrorHasItsCodeANameAndAMessage() throws {
        for (error, code, name) in Self.all {
            #expect(error.code.rawValue == code)
            #expect(error.name == name)
            #expect(!error.message.isEmpty)
            #expect(!error.message.contains("\n"))
            let json = error.json
            #expect(json["code"] == .int(code))
            #expect(json["message"]?.stringValue == error.message)
            #expect(json["data"]?["name"] == .string(name), "data.name is always present")
        }
    }

    @Test func detailsAreCarriedInData() {
        #expect(RPCError.lineTooLong(limit: 100).data["limit"] == .int(100))
        #expect(RPCError.methodNotFound("nope").data["method"] == "nope")
        #expect(RPCError.hostNotFound("a.example", reason: .noSuchName).data["host"] == "a.example")
        #expect(RPCError.limitExceeded("x", limit: 3).data["limit"] == .int(3))
        #expect(RPCError.invalidParams(field: "setCookie[2]", "bad").data["field"] == "setCookie[2]")
    }

    @Test func detailsCannotReplaceTheName() {
        let error = RPCError(code: .internalError, name: "Real", message: "m", details: ["name": "Fake", "x": 1])
        #expect(error.name == "Real")
        #expect(error.data.keys.filter { $0 == "name" }.count == 1)
        #expect(error.data["x"] == .int(1))
    }

    @Test func errorObjectRoundTrips() throws {
        for (error, _, _) in Self.all {
            #expect(RPCError(json: error.json) == error)
        }
    }

    @Test func malformedErrorObjectsAreRejected() {
        #expect(RPCError(json: ["message": "m"]) == nil)
        #expect(RPCError(json: ["code": 1]) == nil)
        #expect(RPCError(json: ["code": "1", "message": "m"]) == nil)
        #expect(RPCError(json: ["code": number("1.5"), "message": "m"]) == nil)
        #expect(RPCError(json: ["code": 1, "message": 2]) == nil)
        #expect(RPCError(json: "error") == nil)
    }

    /// data is optional in JSON-RPC; a foreign error without it still reads.
    @Test func errorWithoutDataReads() throws {
        let error = try #require(RPCError(json: ["code": -32000, "message": "server error"]))
        #expect(error.code.rawValue == -32000)
        #expect(error.message == "server error")
    }
}

struct RPCResponseTests {
    static func response(_ text: String) -> RPCResponse? { parsed(text).flatMap(RPCResponse.init(json:)) }

    @Test func successResponse() throws {
        let response = try #require(Self.response(#"{"jsonrpc":"2.0","result":{"deleted":3},"id":1}"#))
        #expect(response.id == .number(JSONNumber(1)))
        #expect(try response.outcome.get() == ["deleted": 3])
    }

    @Test func nullResultIsASuccess() throws {
        let response = try #require(Self.response(#"{"jsonrpc":"2.0","result":null,"id":"a"}"#))
        #expect(try response.outcome.get() == .null)
    }

    @Test func errorResponse() throws {
        let response = try #require(
            Self.response(
                #"{"jsonrpc":"2.0","error":{"code":-32601,"message":"m","data":{"name":"MethodNotFound"}},"id":null}"#
            ))
        #expect(response.id == .null)
        guard case .failure(let error) = response.outcome else {
            Issue.record("expected an error")
            return
        }
        #expect(error.code == .methodNotFound)
        #expect(error.name == "MethodNotFound")
    }

    @Test func encoderOutputReadsBack() throws {
        var output = JSONOutput()
        RPCEncoder.writeError(.hostNotFound("x.example", reason: .noSuchName), id: .string("z"), to: &output)
        let out = output.bytes
        let response = try #require(RPCResponse(json: try JSONParser.parse(out)))
        #expect(response.id == .string("z"))
        guard case .failure(let error) = response.outcome else {
            Issue.record("expected an error")
            return
        }
        #expect(error == .hostNotFound("x.example", reason: .noSuchName))
    }

    @Test(arguments: [
        #"{"result":1,"id":1}"#, #"{"jsonrpc":"1.0","result":1,"id":1}"#, #"{"jsonrpc":"2.0","result":1}"#,
        #"{"jsonrpc":"2.0","id":1}"#, #"{"jsonrpc":"2.0","result":1,"id":{}}"#,
        #"{"jsonrpc":"2.0","result":1,"id":true}"#,
        #"{"jsonrpc":"2.0","error":{"code":"x","message":"m"},"id":1}"#, #"{"jsonrpc":"2.0","error":1,"id":1}"#,
        #"[{"jsonrpc":"2.0","result":1,"id":1}]"#, "1",
    ])
    func notAResponse(_ text: String) {
        #expect(Self.response(text) == nil)
    }
}
