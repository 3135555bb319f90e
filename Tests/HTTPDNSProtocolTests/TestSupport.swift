import HTTPDNSProtocol
import HTTPDNSTestSupport

/// Parses bytes, returning the error instead of throwing (typed throws make this the short form).
func parseResult(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<JSON, JSONParseError> {
    do throws(JSONParseError) {
        return .success(try JSONParser.parse(bytes, maxDepth: maxDepth))
    } catch {
        return .failure(error)
    }
}

func parseResult(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<JSON, JSONParseError> {
    parseResult(Array(text.utf8), maxDepth: maxDepth)
}

/// The parse error for `bytes`, or nil when they were accepted.
func parseError(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> JSONParseError? {
    if case .failure(let error) = parseResult(bytes, maxDepth: maxDepth) { return error }
    return nil
}

func parseError(_ text: String) -> JSONParseError? { parseError(Array(text.utf8)) }

/// The parsed value, or nil when the input was rejected.
func parsed(_ bytes: [UInt8]) -> JSON? { try? parseResult(bytes).get() }
func parsed(_ text: String) -> JSON? { parsed(Array(text.utf8)) }

/// Decodes one line as the server does.
func decode(_ bytes: [UInt8], maxBatch: Int = 16) -> RPCLine {
    bytes.withUnsafeBufferPointer { RPCDecoder.decode(line: $0, maxBatch: maxBatch) }
}

func decode(_ text: String, maxBatch: Int = 16) -> RPCLine { decode(Array(text.utf8), maxBatch: maxBatch) }

extension RPCLine {
    var single: RPCInbound? {
        if case .single(let inbound) = self { return inbound }
        return nil
    }

    var batch: [RPCInbound]? {
        if case .batch(let elements) = self { return elements }
        return nil
    }

    var failure: RPCError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension RPCInbound {
    var request: RPCRequest? {
        if case .request(let request) = self { return request }
        return nil
    }

    /// The error of a malformed element.
    var error: RPCError? {
        if case .invalid(_, let error) = self { return error }
        return nil
    }

    /// The id a malformed element is answered with (`.some(nil)` never happens for a readable element).
    var errorID: RPCID?? {
        if case .invalid(let id, _) = self { return .some(id) }
        return nil
    }
}

/// A JSON number from a literal that must be valid.
func number(_ literal: String) -> JSON {
    guard case .number(let n)? = parsed(literal) else { preconditionFailure("not a JSON number: \(literal)") }
    return .number(n)
}

/// Unicode scalars, so that assertions never lean on String's canonical equivalence.
func scalars(_ s: String?) -> [UInt32]? { s.map { $0.unicodeScalars.map(\.value) } }
