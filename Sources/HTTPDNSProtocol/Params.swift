/// Typed access to a `params` object. Each accessor throws -32602 naming the member, so a
/// method's parser reads like the list of its fields (systemd's dispatch-table habit).
///
/// The object is either a parsed tree or still in the request's bytes, indexed by
/// `RequestScanner` (the request path's fast lane). Both answer every accessor the same way, so
/// each method's params are parsed by one piece of code, errors included. Params over request
/// bytes are valid only while those bytes are: a method reads them before it returns.
public struct Params {
    private enum Storage {
        case tree(JSONObject)
        case raw(RawObject)
    }

    private let storage: Storage

    public init(_ object: JSONObject) { storage = .tree(object) }

    init(raw: RawObject) { storage = .raw(raw) }

    /// How many members the object has, a repeated name counted each time.
    public var memberCount: Int {
        switch storage {
        case .tree(let object): return object.count
        case .raw(let object): return object.members.count
        }
    }

    /// Whether a member is named `field` (whatever its value).
    public func has(_ field: StaticString) -> Bool { value(field) != nil }

    /// The last member named `field` (duplicates: the last wins, as `JSONObject` lookups do).
    /// Field names are literals: the fast lane compares them to the request's bytes in place.
    func value(_ field: StaticString) -> ParamValue? {
        switch storage {
        case .tree(let object):
            return object[field.description].map(ParamValue.tree)
        case .raw(let object):
            guard let member = object.last(named: field) else { return nil }
            return .raw(object.line, member)
        }
    }

    public func requiredString(_ field: StaticString) throws(RPCError) -> String {
        guard let value = value(field), !value.isNull else {
            throw .invalidParams(field: field.description, "is required")
        }
        guard let s = value.stringValue else {
            throw .invalidParams(field: field.description, "must be a string, not \(value.typeName)")
        }
        return s
    }

    /// A required string's UTF-8, in place when the request's bytes hold it as it is (no
    /// escape): the request path reads URLs without building a `String` first. Errors as
    /// `requiredString`.
    public func withRequiredString<R>(_ field: StaticString, _ body: (UnsafeBufferPointer<UInt8>) -> R)
        throws(RPCError) -> R
    {
        if case .raw(let object) = storage, let member = object.last(named: field), !member.valueHasEscape,
            object.line[member.value.lowerBound] == UInt8(ascii: "\"")
        {
            return body(
                UnsafeBufferPointer(
                    rebasing: object.line[(member.value.lowerBound + 1)..<(member.value.upperBound - 1)]))
        }
        return try requiredString(field).withUTF8Bytes(body)
    }

    public func optionalString(_ field: StaticString) throws(RPCError) -> String? {
        guard let value = value(field), !value.isNull else { return nil }
        guard let s = value.stringValue else {
            throw .invalidParams(field: field.description, "must be a string, not \(value.typeName)")
        }
        return s
    }

    public func optionalBool(_ field: StaticString) throws(RPCError) -> Bool? {
        guard let value = value(field), !value.isNull else { return nil }
        guard let b = value.boolValue else {
            throw .invalidParams(field: field.description, "must be a boolean, not \(value.typeName)")
        }
        return b
    }

    /// An integer within `range` (fractions and exponents are rejected).
    public func optionalInt(_ field: StaticString, in range: ClosedRange<Int64>) throws(RPCError) -> Int64? {
        guard let value = value(field), !value.isNull else { return nil }
        guard let number = value.numberValue else {
            throw .invalidParams(field: field.description, "must be an integer, not \(value.typeName)")
        }
        guard let int = number.int64Value else { throw .invalidParams(field: field.description, "must be an integer") }
        guard range.contains(int) else {
            throw .invalidParams(
                field: field.description, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return int
    }

    public func requiredStringArray(_ field: StaticString) throws(RPCError) -> [String] {
        guard let value = value(field), !value.isNull else {
            throw .invalidParams(field: field.description, "is required")
        }
        return try value.strings(field: field.description)
    }

    /// One of a fixed set of strings.
    public func optionalEnum<E: RawRepresentable<String>>(_ field: StaticString, _ type: E.Type) throws(RPCError) -> E?
    {
        guard let raw = try optionalString(field) else { return nil }
        guard let value = E(rawValue: raw) else {
            throw .invalidParams(field: field.description, "unknown value \(RPCError.quoted(raw))")
        }
        return value
    }
}

/// One member's value: a tree node, or its bytes in a request line that was already validated.
enum ParamValue {
    case tree(JSON)
    case raw(UnsafeBufferPointer<UInt8>, RawObject.Member)

    /// A cursor at a raw value. The line was validated as a whole, so nothing here can fail.
    private static func cursor(_ line: UnsafeBufferPointer<UInt8>, at offset: Int) -> JSONCursor {
        var cursor = JSONCursor(bytes: line, maxDepth: .max)
        cursor.index = offset
        return cursor
    }

    private var firstByte: UInt8? {
        if case .raw(let line, let member) = self { return line[member.value.lowerBound] }
        return nil
    }

    var isNull: Bool {
        switch self {
        case .tree(let json): return json.isNull
        case .raw: return firstByte == UInt8(ascii: "n")
        }
    }

    var typeName: String {
        switch self {
        case .tree(let json): return json.typeName
        case .raw(let line, let member): return Self.typeName(startingWith: line[member.value.lowerBound])
        }
    }

    /// The JSON type of a valid value from its first byte.
    static func typeName(startingWith byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "n"): return "null"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "boolean"
        case UInt8(ascii: "\""): return "string"
        case UInt8(ascii: "["): return "array"
        case UInt8(ascii: "{"): return "object"
        default: return "number"
        }
    }

    var stringValue: String? {
        switch self {
        case .tree(let json):
            return json.stringValue
        case .raw(let line, let member):
            let range = member.value
            guard line[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
            // Validated with the line: without an escape, the value is the bytes between the quotes.
            guard member.valueHasEscape else {
                return String(
                    decoding: UnsafeBufferPointer(rebasing: line[(range.lowerBound + 1)..<(range.upperBound - 1)]),
                    as: UTF8.self)
            }
            var cursor = Self.cursor(line, at: range.lowerBound)
            return try? cursor.parseString()
        }
    }

    var boolValue: Bool? {
        switch self {
        case .tree(let json): return json.boolValue
        case .raw(let line, let member):
            switch line[member.value.lowerBound] {
            case UInt8(ascii: "t"): return true
            case UInt8(ascii: "f"): return false
            default: return nil
            }
        }
    }

    var numberValue: JSONNumber? {
        switch self {
        case .tree(let json):
            return json.numberValue
        case .raw(let line, let member):
            let range = member.value
            let first = line[range.lowerBound]
            guard first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                return nil
            }
            return JSONNumber(
                validatedLiteral: String(decoding: UnsafeBufferPointer(rebasing: line[range]), as: UTF8.self))
        }
    }

    /// An array of strings; -32602 naming the array, or the first element that is not a string.
    func strings(field: String) throws(RPCError) -> [String] {
        switch self {
        case .tree(let json):
            guard let elements = json.arrayValue else {
                throw .invalidParams(field: field.description, "must be an array of strings, not \(json.typeName)")
            }
            var strings: [String] = []
            strings.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() {
                guard let s = element.stringValue else {
                    throw .invalidParams(field: "\(field)[\(i)]", "must be a string, not \(element.typeName)")
                }
                strings.append(s)
            }
            return strings
        case .raw(let line, let member):
            let range = member.value
            guard line[range.lowerBound] == UInt8(ascii: "[") else {
                throw .invalidParams(field: field.description, "must be an array of strings, not \(typeName)")
            }
            var strings: [String] = []
            var cursor = Self.cursor(line, at: range.lowerBound + 1)
            cursor.skipWhitespace()
            if cursor.current == UInt8(ascii: "]") { return strings }
            while true {
                cursor.skipWhitespace()
                let byte = cursor.current
                guard byte == UInt8(ascii: "\""), let s = try? cursor.parseString() else {
                    throw .invalidParams(
                        field: "\(field)[\(strings.count)]",
                        "must be a string, not \(Self.typeName(startingWith: byte))")
                }
                strings.append(s)
                cursor.skipWhitespace()
                if cursor.current == UInt8(ascii: "]") { return strings }
                cursor.index += 1  // ","
            }
        }
    }
}

/// A `params` object in place in a request line: where each member's name and value are.
struct RawObject {
    struct Member {
        /// The name's bytes, between the quotes (never holding an escape).
        var name: Range<Int>
        var value: Range<Int>
        /// The value is a string holding an escape (its bytes then differ from its content).
        var valueHasEscape = false
    }

    let line: UnsafeBufferPointer<UInt8>
    let members: [Member]

    func last(named field: StaticString) -> Member? {
        for member in members.reversed() where nameEquals(member.name, field) { return member }
        return nil
    }

    private func nameEquals(_ name: Range<Int>, _ field: StaticString) -> Bool {
        guard name.count == field.utf8CodeUnitCount else { return false }
        let expected = field.utf8Start
        for i in 0..<name.count where line[name.lowerBound + i] != expected[i] { return false }
        return true
    }
}
