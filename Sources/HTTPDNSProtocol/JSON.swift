/// A JSON value, as exchanged on the wire.
///
/// Numbers keep their literal text so that a request `id` is echoed exactly as the client
/// wrote it (`1`, `1.0` and `1e0` stay distinct). Objects keep member order; lookups take
/// the last member of a name, as most parsers do.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

/// The literal text of a JSON number, validated against RFC 8259's grammar.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    public let literal: String

    /// Only the parser and the integer/double initialisers build numbers, so `literal` is always valid JSON.
    init(validatedLiteral: String) { self.literal = validatedLiteral }

    public init(_ value: Int) { self.literal = String(value) }
    public init(_ value: Int64) { self.literal = String(value) }

    /// Non-finite values have no JSON form; they are written as 0.
    public init(_ value: Double) {
        if !value.isFinite {
            self.literal = "0"
        } else if value == value.rounded(.towardZero) && abs(value) < 1e15 {
            self.literal = String(Int64(value))
        } else {
            self.literal = String(value)
        }
    }

    /// The value as an integer when the literal is one (no fraction, no exponent) and fits.
    public var int64Value: Int64? { Int64(literal) }

    /// The value as a double (every valid literal parses).
    public var doubleValue: Double { Double(literal) ?? 0 }

    public var description: String { literal }
}

/// An ordered list of members.
public struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var members: [(key: String, value: JSON)]

    public init() { self.members = [] }
    public init(_ members: [(key: String, value: JSON)]) { self.members = members }
    public init(dictionaryLiteral elements: (String, JSON)...) { self.members = elements.map { ($0.0, $0.1) } }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public subscript(key: String) -> JSON? {
        get {
            // Names compare code unit by code unit (RFC 8259 §8.3), not by Unicode equivalence.
            for member in members.reversed() where member.key.hasSameBytes(as: key) { return member.value }
            return nil
        }
        set {
            members.removeAll { $0.key.hasSameBytes(as: key) }
            if let newValue { members.append((key, newValue)) }
        }
    }

    /// Appends without checking for an earlier member of the name (the builder's fast path).
    public mutating func append(_ key: String, _ value: JSON) { members.append((key, value)) }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }
    public func makeIterator() -> IndexingIterator<[(key: String, value: JSON)]> { members.makeIterator() }
}

extension JSON {
    public subscript(key: String) -> JSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The JSON type's name, for error messages ("expected a string, got a number").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    public static func int(_ value: Int) -> JSON { .number(JSONNumber(value)) }
    public static func int64(_ value: Int64) -> JSON { .number(JSONNumber(value)) }
    public static func double(_ value: Double) -> JSON { .number(JSONNumber(value)) }

}

extension JSON: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(JSONObject(elements.map { ($0.0, $0.1) }))
    }
}

extension String {
    /// Equal UTF-8 bytes (RFC 8259 §8.3 and RFC 6265bis compare octets; `==` would also equate
    /// canonically equivalent Unicode).
    @inlinable
    public func hasSameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return withUTF8Bytes(and: other) { x, y in
            for i in 0..<x.count where x[i] != y[i] { return false }
            return true
        }
    }

    /// A test over this string's and `other`'s UTF-8, both in place (copies only for bridged
    /// strings). Not generic and always inlined, because the optimizer does not flatten the
    /// generic `withUTF8Bytes` nested in itself; no `var` copies for `withUTF8`, which cost a
    /// retain and a release each.
    @inlinable @inline(__always)
    public func withUTF8Bytes(
        and other: String, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool
    ) -> Bool {
        let inPlace: Bool?? = utf8.withContiguousStorageIfAvailable { x in
            other.utf8.withContiguousStorageIfAvailable { y in body(x, y) }
        }
        if let inPlace, let result = inPlace { return result }
        return Array(utf8).withUnsafeBufferPointer { x in Array(other.utf8).withUnsafeBufferPointer { y in body(x, y) }
        }
    }

    /// `body` over the string's UTF-8: in place when its storage is contiguous (every native
    /// string, without the copy a `var` for `withUTF8` makes), else over a contiguous copy.
    @inlinable
    public func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}
