import HTTPDNSProtocol
import Testing

/// RPCDecoder against JSON-RPC 2.0 (sections 4, 4.1, 4.2, 5.1, 6) and the contract's framing (httpdnsd-rpc(7), FRAMING).
struct RPCDecoderRequestTests {
    @Test func requestWithNumberID() throws {
        let request = try #require(
            decode(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"example.com"}}"#).single?.request)
        #expect(request.id == .number(JSONNumber(1)))
        #expect(request.method == "resolve")
        #expect(request.params["host"] == "example.com")
        #expect(request.id != nil)
    }

    @Test func memberOrderDoesNotMatter() throws {
        let request = try #require(
            decode(#"{"params":{"a":1},"method":"m","id":"x","jsonrpc":"2.0"}"#).single?.request)
        #expect(request.id == .string("x"))
        #expect(request.method == "m")
        #expect(request.params["a"] == .int(1))
    }

    /// Section 4.1: a notification is a request without an "id" member.
    @Test func notificationHasNoIDMember() throws {
        let request = try #require(decode(#"{"jsonrpc":"2.0","method":"flushCache"}"#).single?.request)
        #expect(request.id == nil)
    }

    /// `"id":null` is a request with a null id, which gets a response; it is not a notification.
    @Test func nullIDIsNotANotification() throws {
        let request = try #require(decode(#"{"jsonrpc":"2.0","id":null,"method":"status"}"#).single?.request)
        #expect(request.id == .null)
        #expect(request.id != nil)
    }

    @Test(arguments: [#""abc""#, #""""#, "7", "-1", "1.5", "1.0", "1e3", "-0", "123456789012345678901234567890"])
    func stringAndNumberIDsAreKeptAsWritten(_ id: String) throws {
        let request = try #require(decode(#"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"#).single?.request)
        let rpcID = try #require(request.id)
        #expect(rpcID.json.encodedString == id)
        #expect(rpcID.description == id)
    }

    /// Section 4: an id is a String, Number or Null; anything else is an invalid request answered with id null.
    @Test(arguments: ["{}", #"{"a":1}"#, "[]", "[1]", "true", "false"])
    func otherIDTypesAreInvalid(_ id: String) throws {
        let inbound = try #require(decode(#"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"#).single)
        #expect(inbound.error?.code == .invalidRequest)
        #expect(inbound.errorID == .some(.null))
        #expect(inbound.error?.name == "InvalidRequest")
    }

    @Test(arguments: [
        #"{"id":7,"method":"status"}"#, #"{"jsonrpc":"1.0","id":7,"method":"status"}"#,
        #"{"jsonrpc":2.0,"id":7,"method":"status"}"#, #"{"jsonrpc":"2.0 ","id":7,"method":"status"}"#,
        #"{"jsonrpc":null,"id":7,"method":"status"}"#, #"{"jsonrpc":"2","id":7,"method":"status"}"#,
        #"{"JSONRPC":"2.0","id":7,"method":"status"}"#,
    ])
    func jsonrpcMustBeExactly2_0(_ line: String) throws {
        let inbound = try #require(decode(line).single)
        #expect(inbound.error?.code == .invalidRequest)
        // The id could be read, so the error answers it.
        #expect(inbound.errorID == .some(.number(JSONNumber(7))))
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":7}"#, #"{"jsonrpc":"2.0","id":7,"method":1}"#,
        #"{"jsonrpc":"2.0","id":7,"method":null}"#, #"{"jsonrpc":"2.0","id":7,"method":["status"]}"#,
        #"{"jsonrpc":"2.0","id":7,"method":{"name":"status"}}"#, #"{"jsonrpc":"2.0","id":7,"method":true}"#,
    ])
    func methodMustBeAString(_ line: String) throws {
        let inbound = try #require(decode(line).single)
        #expect(inbound.error?.code == .invalidRequest)
        #expect(inbound.errorID == .some(.number(JSONNumber(7))))
    }

    /// A malformed notification still gets an error: its id cannot be trusted, so it is answered with null.
    @Test func malformedNotificationIsAnsweredWithNullID() throws {
        let inbound = try #require(decode(#"{"jsonrpc":"2.0","method":5}"#).single)
        #expect(inbound.error?.code == .invalidRequest)
        #expect(inbound.errorID == .some(.null))
    }

    @Test func paramsObjectAbsentOrNull() throws {
        let object = #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[1]}}"#
        let withObject = try #require(decode(object).single?.request)
        #expect(withObject.params == ["x": [1]])
        let absent = try #require(decode(#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).single?.request)
        #expect(absent.params.count == 0)
        let null = try #require(decode(#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#).single?.request)
        #expect(null.params.count == 0)
    }

    /// The contract takes params by name. Positional params are well-formed JSON-RPC, so they are invalid params.
    @Test func positionalParamsAreInvalidParams() throws {
        let inbound = try #require(decode(#"{"jsonrpc":"2.0","id":3,"method":"resolve","params":["a"]}"#).single)
        let error = try #require(inbound.error)
        #expect(error.code == .invalidParams)
        #expect(error.data["field"] == "params")
        #expect(error.name == "InvalidParams")
        #expect(inbound.errorID == .some(.number(JSONNumber(3))))
    }

    /// Section 4.1: "The Server MUST NOT reply to a Notification", and names "Invalid params" as an error the
    /// client of a notification never learns about. Positional params make a well-formed notification that the
    /// contract cannot serve, so it must be dropped; today it decodes to an error the server answers (id null).
    @Test
    func notificationWithPositionalParamsIsNotAnswered() throws {
        let inbound = try #require(decode(#"{"jsonrpc":"2.0","method":"flushCache","params":[]}"#).single)
        let answered: Bool
        switch inbound {
        case .request(let request): answered = request.id != nil
        case .invalid(let id, _): answered = id != nil
        }
        #expect(!answered)
    }

    /// Section 4: params, when present, must be a structured value.
    @Test(arguments: [#""a""#, "1", "true", "false"])
    func scalarParamsAreAnInvalidRequest(_ params: String) throws {
        let inbound = try #require(decode(#"{"jsonrpc":"2.0","id":3,"method":"m","params":\#(params)}"#).single)
        #expect(inbound.error?.code == .invalidRequest)
        #expect(inbound.errorID == .some(.number(JSONNumber(3))))
    }

    @Test func duplicateMembersTakeTheLast() throws {
        let request = try #require(
            decode(#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#).single?.request)
        #expect(request.id == .number(JSONNumber(2)))
        #expect(request.method == "b")
    }

    @Test func unknownMembersAreIgnored() throws {
        let request = try #require(decode(#"{"jsonrpc":"2.0","id":1,"method":"m","extra":{"x":1}}"#).single?.request)
        #expect(request.method == "m")
    }

    /// A request's own JSON form decodes back to the same request.
    @Test func requestJSONRoundTrips() throws {
        let original = RPCRequest(id: .string("q"), method: "resolve", params: ["host": "a.example"])
        let decoded = try #require(decode(original.json.encoded).single?.request)
        #expect(decoded.id == original.id)
        #expect(decoded.method == original.method)
        #expect(decoded.params == original.params)
        let notification = RPCRequest(id: nil, method: "flushCache")
        #expect(notification.json["id"] == nil)
        #expect(try #require(decode(notification.json.encoded).single?.request).id == nil)
    }
}

struct RPCDecoderLineTests {
    /// Section 5.1: invalid JSON is one -32700 answered with id null (also for a broken batch).
    @Test(arguments: [
        "garbage", #"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
        #"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method""#, "", "{",
        "\u{7F}",
    ])
    func invalidJSONIsAParseError(_ line: String) throws {
        let error = try #require(decode(line).failure)
        #expect(error.code == .parseError)
        #expect(error.name == "ParseError")
    }

    @Test func invalidUTF8IsAParseError() throws {
        let bytes = Array(#"{"jsonrpc":"2.0","id":1,"method":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)
        #expect(decode(bytes).failure?.code == .parseError)
    }

    @Test func tooDeepIsAParseErrorNotACrash() throws {
        let line = #"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"# + String(repeating: "[", count: 100_000)
        #expect(decode(line).failure?.code == .parseError)
    }

    /// Section 6: an empty array is one Invalid Request response, not an empty batch.
    @Test func emptyBatchIsOneInvalidRequest() throws {
        let error = try #require(decode("[]").failure)
        #expect(error.code == .invalidRequest)
        #expect(decode(" [ ] ").failure?.code == .invalidRequest)
    }

    /// Section 6: a non-empty batch of invalid elements is answered element by element.
    @Test func batchOfNonObjectsIsOneErrorPerElement() throws {
        let one = try #require(decode("[1]").batch)
        #expect(one.count == 1)
        #expect(one[0].error?.code == .invalidRequest)
        #expect(one[0].errorID == .some(.null))
        let three = try #require(decode("[1,2,3]").batch)
        #expect(three.map { $0.error?.code } == [.invalidRequest, .invalidRequest, .invalidRequest])
    }

    @Test func mixedBatchKeepsOrderAndKinds() throws {
        let line = """
            [{"jsonrpc":"2.0","method":"sum","params":{"a":1},"id":"1"},\
            {"jsonrpc":"2.0","method":"notify_hello"},\
            {"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},\
            {"foo":"boo"},\
            {"jsonrpc":"2.0","method":"get_data","id":"9"},\
            [],\
            "x",\
            {"jsonrpc":"2.0","id":{"a":1},"method":"m"}]
            """
        let batch = try #require(decode(line).batch)
        try #require(batch.count == 8)
        #expect(batch[0].request?.id == .string("1"))
        #expect(batch[0].request?.params["a"] == .int(1))
        #expect(batch[1].request.map { $0.id == nil } == true)
        #expect(batch[2].error?.code == .invalidParams)
        #expect(batch[2].errorID == .some(.string("2")))
        #expect(batch[3].error?.code == .invalidRequest)
        #expect(batch[3].errorID == .some(.null))
        #expect(batch[4].request?.method == "get_data")
        #expect(batch[5].error?.code == .invalidRequest, "a nested array is not a request")
        #expect(batch[6].error?.code == .invalidRequest)
        #expect(batch[7].error?.code == .invalidRequest)
        #expect(batch[7].errorID == .some(.null))
    }

    @Test func batchSizeLimit() throws {
        let element = #"{"jsonrpc":"2.0","method":"status","id":1}"#
        let atLimit = "[" + Array(repeating: element, count: 4).joined(separator: ",") + "]"
        #expect(decode(atLimit, maxBatch: 4).batch?.count == 4)
        let overLimit = "[" + Array(repeating: element, count: 5).joined(separator: ",") + "]"
        let error = try #require(decode(overLimit, maxBatch: 4).failure)
        #expect(error.code == .limitExceeded)
        #expect(error.code.rawValue == -32003)
        #expect(error.data["limit"] == .int(4))
        #expect(error.name == "LimitExceeded")
        // Invalid elements count too: the limit is on the array, before looking inside.
        #expect(decode("[1,2,3,4,5]", maxBatch: 4).failure?.code == .limitExceeded)
    }

    @Test func singleRequestIsNotABatchEvenWithMaxBatchOne() throws {
        #expect(decode(#"{"jsonrpc":"2.0","method":"status","id":1}"#, maxBatch: 1).single?.request != nil)
        #expect(decode(#"[{"jsonrpc":"2.0","method":"status","id":1}]"#, maxBatch: 1).batch?.count == 1)
    }

    /// Section 5.1 example "rpc call with invalid Request object": valid JSON but not an object is -32600.
    @Test(arguments: ["1", "-1.5", #""request""#, "true", "false", "null"])
    func nonObjectTopLevelIsAnInvalidRequest(_ line: String) throws {
        let inbound = try #require(decode(line).single)
        #expect(inbound.error?.code == .invalidRequest)
        #expect(inbound.errorID == .some(.null))
    }

    @Test func surroundingWhitespaceIsAllowed() throws {
        #expect(decode(" \t{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\r ").single?.request?.method == "m")
    }

    @Test func decodeJSONMatchesDecodeLine() throws {
        let json: JSON = ["jsonrpc": "2.0", "id": 5, "method": "m"]
        guard case .single(.request(let request)) = RPCDecoder.decode(json: json, maxBatch: 4) else {
            Issue.record("not decoded as a request")
            return
        }
        #expect(request.id == .number(JSONNumber(5)))
    }
}
