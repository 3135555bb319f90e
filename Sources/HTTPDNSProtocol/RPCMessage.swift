/// A JSON-RPC 2.0 request id: a string, a number (kept as written) or null.
public enum RPCID: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case number(JSONNumber)
    case null

    public var json: JSON {
        switch self {
        case .string(let s): return .string(s)
        case .number(let n): return .number(n)
        case .null: return .null
        }
    }

    public init?(json: JSON) {
        switch json {
        case .string(let s): self = .string(s)
        case .number(let n): self = .number(n)
        case .null: self = .null
        default: return nil
        }
    }

    public var description: String { json.encodedString }

    /// Appends the id as the client wrote it (a number keeps its literal).
    public func write(to out: inout JSONOutput) {
        switch self {
        case .string(let s): JSONWriter.string(s, to: &out)
        case .number(let n): JSONWriter.number(n, to: &out)
        case .null: JSONWriter.raw("null", to: &out)
        }
    }
}

/// One validated request or notification.
public struct RPCRequest: Sendable {
    /// nil for a notification (no `id` member): it gets no response.
    public var id: RPCID?
    public var method: String
    /// The `params` object; an absent `params` is an empty object.
    public var params: JSONObject

    public init(id: RPCID?, method: String, params: JSONObject = JSONObject()) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var json: JSON {
        var object = JSONObject()
        object.append("jsonrpc", "2.0")
        if let id { object.append("id", id.json) }
        object.append("method", .string(method))
        object.append("params", .object(params))
        return .object(object)
    }
}

/// What one element of a line turned out to be.
public enum RPCInbound: Sendable {
    case request(RPCRequest)
    /// A malformed element, answered with this error and `id`; a nil `id` marks a well-formed
    /// notification the server cannot run, which JSON-RPC 2.0 §4.1 forbids answering.
    case invalid(RPCID?, RPCError)
}

/// A parsed line: one message or a batch.
public enum RPCLine: Sendable {
    case single(RPCInbound)
    case batch([RPCInbound])
    /// Not JSON at all, or an empty batch: one error response with id null.
    case failure(RPCError)
}

public enum RPCDecoder {
    /// Parses one framed line into requests. Never throws: every problem becomes an error to answer.
    public static func decode(line: UnsafeBufferPointer<UInt8>, maxBatch: Int) -> RPCLine {
        let json: JSON
        do {
            json = try JSONParser.parse(buffer: line)
        } catch {
            return .failure(.parseError(error.description))
        }
        return decode(json: json, maxBatch: maxBatch)
    }

    public static func decode(json: JSON, maxBatch: Int) -> RPCLine {
        if case .array(let elements) = json {
            if elements.isEmpty { return .failure(.invalidRequest("empty batch")) }
            if elements.count > maxBatch {
                return .failure(.limitExceeded("requests in one batch", limit: maxBatch))
            }
            return .batch(elements.map(decodeElement))
        }
        return .single(decodeElement(json))
    }

    static func decodeElement(_ json: JSON) -> RPCInbound {
        guard case .object(let object) = json else {
            return .invalid(.null, .invalidRequest("a request must be an object, not \(json.typeName)"))
        }
        var id: RPCID?
        if let rawID = object["id"] {
            guard let parsed = RPCID(json: rawID) else {
                return .invalid(.null, .invalidRequest("id must be a string, a number or null"))
            }
            id = parsed
        }
        guard object["jsonrpc"] == .string("2.0") else {
            return .invalid(id ?? .null, .invalidRequest("\"jsonrpc\" must be \"2.0\""))
        }
        guard let method = object["method"]?.stringValue else {
            return .invalid(id ?? .null, .invalidRequest("\"method\" must be a string"))
        }
        var params = JSONObject()
        switch object["params"] {
        case nil, .null?:
            break
        case .object(let p)?:
            params = p
        case .array?:
            // A notification is never answered, not even with an error (§4.1).
            return .invalid(id, .invalidParams(field: "params", "params are passed by name, as an object"))
        case let other?:
            return .invalid(id ?? .null, .invalidRequest("params must be an object, not \(other.typeName)"))
        }
        return .request(RPCRequest(id: id, method: method, params: params))
    }
}

public enum RPCEncoder {
    /// Appends `{"jsonrpc":"2.0","id":…,"result":…}` for a typed result, written in place.
    public static func writeResult<Result: MethodResult>(_ result: Result, id: RPCID, to out: inout JSONOutput) {
        JSONWriter.raw(#"{"jsonrpc":"2.0","id":"#, to: &out)
        id.write(to: &out)
        JSONWriter.raw(#","result":"#, to: &out)
        result.write(to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// Appends `{"jsonrpc":"2.0","id":…,"result":…}`.
    public static func writeResult(_ result: JSON, id: RPCID, to out: inout JSONOutput) {
        JSONWriter.raw(#"{"jsonrpc":"2.0","id":"#, to: &out)
        id.write(to: &out)
        JSONWriter.raw(#","result":"#, to: &out)
        result.write(to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// Appends `{"jsonrpc":"2.0","id":…,"error":{…}}`.
    public static func writeError(_ error: RPCError, id: RPCID, to out: inout JSONOutput) {
        JSONWriter.raw(#"{"jsonrpc":"2.0","id":"#, to: &out)
        id.write(to: &out)
        JSONWriter.raw(#","error":"#, to: &out)
        error.json.write(to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

/// A response as a client reads it.
public struct RPCResponse: Sendable {
    public var id: RPCID
    public var outcome: Result<JSON, RPCError>

    public init(id: RPCID, outcome: Result<JSON, RPCError>) {
        self.id = id
        self.outcome = outcome
    }

    /// Reads one response object; nil when it is not one.
    public init?(json: JSON) {
        guard let object = json.objectValue, object["jsonrpc"] == .string("2.0"),
            let id = object["id"].flatMap(RPCID.init(json:))
        else { return nil }
        self.id = id
        if let error = object["error"] {
            guard let rpcError = RPCError(json: error) else { return nil }
            self.outcome = .failure(rpcError)
        } else if let result = object["result"] {
            self.outcome = .success(result)
        } else {
            return nil
        }
    }
}
