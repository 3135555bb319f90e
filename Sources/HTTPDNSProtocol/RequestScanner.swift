/// A request read in place from its line: the fast lane of `RPCDecoder`.
public struct ScannedRequest {
    /// nil for a notification.
    public var id: RPCID?
    public var method: Method
    /// Over the line's bytes: valid only while the line is.
    public var params: Params
}

/// Reads the common request (one object, `"jsonrpc":"2.0"`, a known method, params by name)
/// straight from the line's bytes: the envelope is matched byte for byte, `params` is indexed
/// in place, and no `JSON` tree or `String` per member name is built.
///
/// It accepts only what it fully understands and gives up (nil) on everything else: a batch,
/// an escape in a member name or in `method`, an unknown method, any envelope that is not
/// plainly valid, any byte the JSON grammar rejects. The caller then decodes the line with
/// `RPCDecoder`, which gives every malformed line its error; so a line gets the same request,
/// or the same error, whichever way it goes. The grammar pieces are `JSONParser`'s own.
public struct RequestScanner {
    /// The members of `params`, reused from line to line.
    private var members: [RawObject.Member] = []

    public init() {}

    /// The request in `line`, or nil when `RPCDecoder` must read it.
    public mutating func scan(_ line: UnsafeBufferPointer<UInt8>) -> ScannedRequest? {
        members.removeAll(keepingCapacity: true)
        var cursor = JSONCursor(bytes: line, maxDepth: JSONParser.defaultMaxDepth)
        var id: Range<Int>?
        var jsonrpc: Range<Int>?
        var method: Range<Int>?
        var paramsSeen = false
        do throws(JSONParseError) {
            cursor.skipWhitespace()
            guard !cursor.atEnd, cursor.current == UInt8(ascii: "{") else { return nil }
            cursor.index += 1
            cursor.skipWhitespace()
            guard !cursor.atEnd, cursor.current != UInt8(ascii: "}") else { return nil }
            while true {
                guard let name = try Self.memberName(&cursor) else { return nil }
                let start = cursor.index
                switch Self.envelopeMember(line, name) {
                case .params:
                    members.removeAll(keepingCapacity: true)
                    if !cursor.atEnd && cursor.current == UInt8(ascii: "{") {
                        guard try scanParams(&cursor) else { return nil }
                        paramsSeen = true
                    } else {
                        try cursor.skipValue(depth: 1)
                        // Absent and null params are the same; any other kind is RPCDecoder's to refuse.
                        guard line[start] == UInt8(ascii: "n") else { return nil }
                        paramsSeen = false
                    }
                case .id:
                    try cursor.skipValue(depth: 1)
                    id = start..<cursor.index
                case .jsonrpc:
                    try cursor.skipValue(depth: 1)
                    jsonrpc = start..<cursor.index
                case .method:
                    try cursor.skipValue(depth: 1)
                    method = start..<cursor.index
                case nil:
                    try cursor.skipValue(depth: 1)
                }
                cursor.skipWhitespace()
                guard !cursor.atEnd else { return nil }
                if cursor.current == UInt8(ascii: ",") {
                    cursor.index += 1
                    continue
                }
                guard cursor.current == UInt8(ascii: "}") else { return nil }
                cursor.index += 1
                break
            }
            cursor.skipWhitespace()
            guard cursor.atEnd else { return nil }
        } catch {
            return nil
        }
        guard let jsonrpc, Self.isVersion2(line, jsonrpc), let method, let known = Self.method(line, method) else {
            return nil
        }
        var requestID: RPCID?
        if let id {
            guard let parsed = Self.id(line, id) else { return nil }
            requestID = parsed
        }
        let params = Params(raw: RawObject(line: line, members: paramsSeen ? members : []))
        return ScannedRequest(id: requestID, method: known, params: params)
    }

    /// Indexes a `params` object (depth 2 of the line) member by member; false to give up.
    private mutating func scanParams(_ cursor: inout JSONCursor) throws(JSONParseError) -> Bool {
        cursor.index += 1
        cursor.skipWhitespace()
        if !cursor.atEnd && cursor.current == UInt8(ascii: "}") {
            cursor.index += 1
            return true
        }
        while true {
            guard let name = try Self.memberName(&cursor) else { return false }
            let start = cursor.index
            var hasEscape = false
            if !cursor.atEnd && cursor.current == UInt8(ascii: "\"") {
                hasEscape = try cursor.skipString()
            } else {
                try cursor.skipValue(depth: 2)
            }
            members.append(RawObject.Member(name: name, value: start..<cursor.index, valueHasEscape: hasEscape))
            cursor.skipWhitespace()
            guard !cursor.atEnd else { return false }
            if cursor.current == UInt8(ascii: ",") {
                cursor.index += 1
                continue
            }
            guard cursor.current == UInt8(ascii: "}") else { return false }
            cursor.index += 1
            return true
        }
    }

    /// Reads `"name":` up to the value; nil (give up) for a name with an escape or a missing colon.
    private static func memberName(_ cursor: inout JSONCursor) throws(JSONParseError) -> Range<Int>? {
        cursor.skipWhitespace()
        guard !cursor.atEnd, cursor.current == UInt8(ascii: "\"") else { return nil }
        let start = cursor.index + 1
        guard try !cursor.skipString() else { return nil }
        let name = start..<(cursor.index - 1)
        cursor.skipWhitespace()
        guard !cursor.atEnd, cursor.current == UInt8(ascii: ":") else { return nil }
        cursor.index += 1
        cursor.skipWhitespace()
        return name
    }

    private enum EnvelopeMember {
        case jsonrpc, id, method, params
    }

    private static func envelopeMember(_ line: UnsafeBufferPointer<UInt8>, _ name: Range<Int>) -> EnvelopeMember? {
        let bytes = UnsafeBufferPointer(rebasing: line[name])
        switch bytes.count {
        case 2 where equals(bytes, "id"): return .id
        case 6 where equals(bytes, "method"): return .method
        case 6 where equals(bytes, "params"): return .params
        case 7 where equals(bytes, "jsonrpc"): return .jsonrpc
        default: return nil
        }
    }

    private static func isVersion2(_ line: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Bool {
        equals(UnsafeBufferPointer(rebasing: line[value]), "\"2.0\"")
    }

    /// A method name without escapes, matched against the contract's names without allocating.
    private static func method(_ line: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Method? {
        guard value.count >= 2, line[value.lowerBound] == UInt8(ascii: "\"") else { return nil }
        return Method(utf8: UnsafeBufferPointer(rebasing: line[(value.lowerBound + 1)..<(value.upperBound - 1)]))
    }

    private static func id(_ line: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> RPCID? {
        switch line[value.lowerBound] {
        case UInt8(ascii: "n"):
            return .null
        case UInt8(ascii: "\""):
            var cursor = JSONCursor(bytes: line, maxDepth: .max)
            cursor.index = value.lowerBound
            return (try? cursor.parseString()).map(RPCID.string)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let literal = String(decoding: UnsafeBufferPointer(rebasing: line[value]), as: UTF8.self)
            return .number(JSONNumber(validatedLiteral: literal))
        default:
            return nil
        }
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        let expected = text.utf8Start
        for i in 0..<bytes.count where bytes[i] != expected[i] { return false }
        return true
    }
}

extension Method {
    /// Each method's name as bytes, for matching request bytes without building a String.
    private static let names: [(method: Method, bytes: [UInt8])] = allCases.map { ($0, Array($0.rawValue.utf8)) }

    /// The method named by these bytes (a string's content without escapes), if any.
    init?(utf8 name: UnsafeBufferPointer<UInt8>) {
        for candidate in Self.names where candidate.bytes.count == name.count {
            let same = candidate.bytes.withUnsafeBufferPointer { bytes in
                for i in 0..<bytes.count where bytes[i] != name[i] { return false }
                return true
            }
            if same {
                self = candidate.method
                return
            }
        }
        return nil
    }
}
