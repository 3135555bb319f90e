// One description per method: each params and result type lists its members once, as a table of
// key paths, and its codec is derived from that table: params read from a request (errors naming
// the member), params written by a client, results written by the daemon and read by a client. The
// tables are also what the OpenRPC document is checked against (OpenRPCDocumentTests).

/// A member's type, as the OpenRPC document's JSON Schema names it.
public enum MemberType: String, Sendable {
    case string, integer, number, boolean, array, object
}

/// What the Swift side says of one member, to be checked against the OpenRPC document.
public struct MemberSchema: Sendable, Equatable {
    /// The member's name on the wire.
    public var name: String
    /// Its JSON type.
    public var type: MemberType
    /// Params: the caller must send it. Results: the daemon always writes it.
    public var required: Bool
    /// Results: the daemon writes `null` for a value it does not have.
    public var nullable: Bool
    /// Integers: the values accepted (params) or promised (results); nil: any.
    public var range: ClosedRange<Int64>?
    /// Strings of a fixed set: the set.
    public var values: [String]?
    /// Objects, or arrays of objects, whose members are described: those members.
    public var members: [MemberSchema]?

    init(
        _ name: StaticString, _ type: MemberType, required: Bool, nullable: Bool = false,
        range: ClosedRange<Int64>? = nil, values: [String]? = nil, members: [MemberSchema]? = nil
    ) {
        self.name = name.description
        self.type = type
        self.required = required
        self.nullable = nullable
        self.range = range
        self.values = values
        self.members = members
    }
}

/// Where a member's value lives in its Swift type.
public typealias MemberPath<Root, Value> = any WritableKeyPath<Root, Value> & Sendable

// MARK: params

/// One member of a method's params: its schema, how the daemon reads it from a request and how a
/// client writes it.
public struct ParamField<Root>: Sendable {
    /// What the OpenRPC document says of it.
    public let schema: MemberSchema
    let read: @Sendable (inout Root, Params) throws(RPCError) -> Void
    let write: @Sendable (Root, inout JSONObject) -> Void
}

/// Params described by a table of their members; `init(_:)` and `json` follow from it.
public protocol DescribedParams: MethodParams {
    /// The value the members are read into (each member read sets its own property).
    static var blank: Self { get }
    /// The members, in the order the daemon reads them: the first offending one is the one named.
    static var fields: [ParamField<Self>] { get }
    /// The members after the first, which the caller reads in place (`URLParams`).
    init(_ params: Params, afterFirst: Void) throws(RPCError)
}

extension DescribedParams {
    /// Reads the members in table order: -32602 naming the first offending one.
    public init(_ params: Params) throws(RPCError) { self = try Self.described(params) }

    /// The members after the first, from the table.
    public init(_ params: Params, afterFirst: Void) throws(RPCError) {
        self = try Self.described(params, afterFirst: ())
    }

    /// The reading the table describes (what `init(_:)` does unless the type reads its members
    /// itself, on the request path; a test holds the two equal, errors included).
    public static func described(_ params: Params) throws(RPCError) -> Self {
        var value = blank
        for field in fields { try field.read(&value, params) }
        return value
    }

    /// The table's reading of the members after the first.
    public static func described(_ params: Params, afterFirst: Void) throws(RPCError) -> Self {
        var value = blank
        for field in fields.dropFirst() { try field.read(&value, params) }
        return value
    }

    /// The members as a client sends them, in table order.
    public var json: JSONObject {
        var object = JSONObject()
        for field in Self.fields { field.write(self, &object) }
        return object
    }

    /// The members, from the table.
    public static var memberSchemas: [MemberSchema] { fields.map(\.schema) }
}

extension ParamField {
    /// A string the caller must send.
    public static func required(_ name: StaticString, _ path: MemberPath<Root, String>) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: true),
            read: { root, params throws(RPCError) in root[keyPath: path] = try params.requiredString(name) },
            write: { root, object in object.append(name.description, .string(root[keyPath: path])) })
    }

    /// An array of strings the caller must send.
    public static func required(_ name: StaticString, _ path: MemberPath<Root, [String]>) -> Self {
        Self(
            schema: MemberSchema(name, .array, required: true),
            read: { root, params throws(RPCError) in root[keyPath: path] = try params.requiredStringArray(name) },
            write: { root, object in object.append(name.description, .array(root[keyPath: path].map(JSON.string))) })
    }

    /// An optional string (nil when absent or null; not sent when nil).
    public static func optional(_ name: StaticString, _ path: MemberPath<Root, String?>) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: false),
            read: { root, params throws(RPCError) in root[keyPath: path] = try params.optionalString(name) },
            write: { root, object in
                if let value = root[keyPath: path] { object.append(name.description, .string(value)) }
            })
    }

    /// An optional boolean kept as given (nil when absent or null; not sent when nil).
    public static func optional(_ name: StaticString, _ path: MemberPath<Root, Bool?>) -> Self {
        Self(
            schema: MemberSchema(name, .boolean, required: false),
            read: { root, params throws(RPCError) in root[keyPath: path] = try params.optionalBool(name) },
            write: { root, object in
                if let value = root[keyPath: path] { object.append(name.description, .bool(value)) }
            })
    }

    /// An optional boolean with a default; a client sends the default only when `sendsDefault`.
    public static func optional(
        _ name: StaticString, _ path: MemberPath<Root, Bool>, default defaultValue: Bool,
        sendsDefault: Bool
    ) -> Self {
        Self(
            schema: MemberSchema(name, .boolean, required: false),
            read: { root, params throws(RPCError) in
                root[keyPath: path] = try params.optionalBool(name) ?? defaultValue
            },
            write: { root, object in
                let value = root[keyPath: path]
                if sendsDefault || value != defaultValue { object.append(name.description, .bool(value)) }
            })
    }

    /// An optional integer within `range` (nil when absent or null; not sent when nil).
    public static func optional(
        _ name: StaticString, _ path: MemberPath<Root, Int?>, in range: ClosedRange<Int64>
    ) -> Self {
        Self(
            schema: MemberSchema(name, .integer, required: false, range: range),
            read: { root, params throws(RPCError) in
                root[keyPath: path] = try params.optionalInt(name, in: range).map(Int.init)
            },
            write: { root, object in
                if let value = root[keyPath: path] { object.append(name.description, .int(value)) }
            })
    }

    /// One of a fixed set of strings, with a default that a client always sends; `unknown` is the
    /// error for a string outside the set (by default `unknown value "<string>"`).
    public static func optional<Value: RawRepresentable<String> & CaseIterable & Sendable>(
        _ name: StaticString, _ path: MemberPath<Root, Value>, default defaultValue: Value,
        unknown: String? = nil
    ) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: false, values: Value.allCases.map(\.rawValue)),
            read: { root, params throws(RPCError) in
                guard let raw = try params.optionalString(name) else {
                    root[keyPath: path] = defaultValue
                    return
                }
                guard let value = Value(rawValue: raw) else {
                    throw .invalidParams(field: name.description, unknown ?? "unknown value \(RPCError.quoted(raw))")
                }
                root[keyPath: path] = value
            },
            write: { root, object in object.append(name.description, .string(root[keyPath: path].rawValue)) })
    }
}

// MARK: results

/// A JSON object the daemon writes straight into its output and a client reads back.
public protocol JSONRecord: Sendable, Equatable {
    /// Appends the compact JSON the daemon sends, straight into its output (no `JSON` tree).
    func write(to out: inout JSONOutput)
    /// Reads it as a client receives it; nil when it does not match the contract.
    init?(json: JSON)
    /// Its members, when it is described by a table (`DescribedRecord`).
    static var memberSchemas: [MemberSchema]? { get }
}

extension JSONRecord {
    /// Not described: nil.
    public static var memberSchemas: [MemberSchema]? { nil }
}

/// One member of a result (or of an object inside one): its schema, how the daemon writes it and
/// how a client reads it.
public struct ResultField<Root>: Sendable {
    /// What the OpenRPC document says of it.
    public let schema: MemberSchema
    /// Writes `{` (when `first`) or `,`, the name and the value; nothing for a member left out.
    let write: @Sendable (Root, inout JSONOutput, inout Bool) -> Void
    /// False when the member does not match the contract.
    let read: @Sendable (inout Root, JSON) -> Bool
}

/// A result, or an object inside one, described by a table of its members; `write(to:)` and
/// `init?(json:)` follow from it.
public protocol DescribedRecord: JSONRecord {
    /// The value the members are read into (each member read sets its own property).
    static var blank: Self { get }
    /// The members, in the order the daemon writes them.
    static var fields: [ResultField<Self>] { get }
}

extension DescribedRecord {
    /// Writes the members the table describes.
    public func write(to out: inout JSONOutput) { writeDescribed(to: &out) }

    /// The encoding the table describes (what `write(to:)` does unless the type writes its bytes
    /// itself, on the request path; a test holds the two equal).
    public func writeDescribed(to out: inout JSONOutput) {
        var first = true
        writeMembers(Self.fields[...], first: &first, to: &out)
        if first { out.append(UInt8(ascii: "{")) }
        out.append(UInt8(ascii: "}"))
    }

    /// Writes some of the members (a result written in pieces), `first` saying whether one was written before.
    func writeMembers(_ fields: ArraySlice<ResultField<Self>>, first: inout Bool, to out: inout JSONOutput) {
        for field in fields { field.write(self, &out, &first) }
    }

    /// Reads the members the table describes; nil when one does not match it.
    public init?(json: JSON) {
        guard let value = Self.described(json) else { return nil }
        self = value
    }

    /// The reading the table describes (what `init?(json:)` does unless the type completes it:
    /// `Cookie` sets the bookkeeping the wire does not carry).
    public static func described(_ json: JSON) -> Self? {
        guard json.objectValue != nil else { return nil }
        var value = blank
        for field in fields { guard field.read(&value, json) else { return nil } }
        return value
    }

    /// The members, from the table.
    public static var memberSchemas: [MemberSchema]? { fields.map(\.schema) }
}

/// Writes `{"name":` or `,"name":`.
@inline(__always)
private func writeName(_ name: StaticString, first: inout Bool, to out: inout JSONOutput) {
    out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
    first = false
    out.appendQuoted(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    out.append(UInt8(ascii: ":"))
}

/// What a nil member is on the wire.
public enum NilMember: Sendable {
    /// Left out.
    case omitted
    /// `null`.
    case null
}

extension ResultField {
    /// A string.
    public static func string(_ name: StaticString, _ path: MemberPath<Root, String>) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: true),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.string(root[keyPath: path], to: &out)
            },
            read: { root, json in
                guard let value = json[name.description]?.stringValue else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// A string that may be nil (absent or null when read).
    public static func string(
        _ name: StaticString, _ path: MemberPath<Root, String?>, nil nilMember: NilMember
    ) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: nilMember == .null, nullable: nilMember == .null),
            write: { root, out, first in
                let value = root[keyPath: path]
                guard value != nil || nilMember == .null else { return }
                writeName(name, first: &first, to: &out)
                JSONWriter.string(value, to: &out)
            },
            read: { root, json in
                root[keyPath: path] = json[name.description]?.stringValue
                return true
            })
    }

    /// One of a fixed set of strings; `unknown` is its value when a reader finds none of the set
    /// (nil: it must be one).
    public static func string<Value: RawRepresentable<String> & CaseIterable & Sendable>(
        _ name: StaticString, _ path: MemberPath<Root, Value>, unknown: Value? = nil
    ) -> Self {
        Self(
            schema: MemberSchema(name, .string, required: true, values: Value.allCases.map(\.rawValue)),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.string(root[keyPath: path].rawValue, to: &out)
            },
            read: { root, json in
                guard let value = json[name.description]?.stringValue.flatMap(Value.init(rawValue:)) ?? unknown else {
                    return false
                }
                root[keyPath: path] = value
                return true
            })
    }

    /// An array of strings (read: every element must be a string).
    public static func strings(_ name: StaticString, _ path: MemberPath<Root, [String]>) -> Self {
        Self(
            schema: MemberSchema(name, .array, required: true),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.stringArray(root[keyPath: path], to: &out)
            },
            read: { root, json in
                guard let value = stringArray(json[name.description]) else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// An array of strings left out when nil.
    public static func strings(_ name: StaticString, _ path: MemberPath<Root, [String]?>) -> Self {
        Self(
            schema: MemberSchema(name, .array, required: false),
            write: { root, out, first in
                guard let value = root[keyPath: path] else { return }
                writeName(name, first: &first, to: &out)
                JSONWriter.stringArray(value, to: &out)
            },
            read: { root, json in
                guard let member = json[name.description] else {
                    root[keyPath: path] = nil
                    return true
                }
                guard let value = stringArray(member) else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// An integer of any width, within `range` when one is given (read: refused outside it);
    /// `absent` is its value when a reader does not find one (nil: it must be there).
    public static func integer<Value: FixedWidthInteger & Sendable>(
        _ name: StaticString, _ path: MemberPath<Root, Value>, in range: ClosedRange<Int64>? = nil,
        absent: Value? = nil
    ) -> Self {
        Self(
            schema: MemberSchema(name, .integer, required: true, range: range),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.integer(Int64(root[keyPath: path]), to: &out)
            },
            read: { root, json in
                guard
                    let value = integerValue(json[name.description], in: range).flatMap(Value.init(exactly:)) ?? absent
                else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// An integer left out when nil.
    public static func integer(_ name: StaticString, _ path: MemberPath<Root, Int?>) -> Self {
        Self(
            schema: MemberSchema(name, .integer, required: false),
            write: { root, out, first in
                guard let value = root[keyPath: path] else { return }
                writeName(name, first: &first, to: &out)
                JSONWriter.integer(value, to: &out)
            },
            read: { root, json in
                root[keyPath: path] = json[name.description]?.numberValue?.int64Value.map(Int.init)
                return true
            })
    }

    /// An integer that may be nil: left out or written as `null` (read as nil when absent or null).
    public static func integer(
        _ name: StaticString, _ path: MemberPath<Root, Int64?>, nil nilMember: NilMember
    ) -> Self {
        Self(
            schema: MemberSchema(name, .integer, required: nilMember == .null, nullable: nilMember == .null),
            write: { root, out, first in
                let value = root[keyPath: path]
                guard value != nil || nilMember == .null else { return }
                writeName(name, first: &first, to: &out)
                JSONWriter.integer(value, to: &out)
            },
            read: { root, json in
                root[keyPath: path] = json[name.description]?.numberValue?.int64Value
                return true
            })
    }

    /// A boolean; `absent` is its value when a reader does not find it (nil: it must be there).
    public static func boolean(
        _ name: StaticString, _ path: MemberPath<Root, Bool>, absent: Bool? = nil
    ) -> Self {
        Self(
            schema: MemberSchema(name, .boolean, required: true),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.bool(root[keyPath: path], to: &out)
            },
            read: { root, json in
                guard let value = json[name.description]?.boolValue ?? absent else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// A number.
    public static func number(_ name: StaticString, _ path: MemberPath<Root, Double>) -> Self {
        Self(
            schema: MemberSchema(name, .number, required: true),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                JSONWriter.number(JSONNumber(root[keyPath: path]), to: &out)
            },
            read: { root, json in
                guard let value = json[name.description]?.numberValue?.doubleValue else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// A number written as `null` when nil (and read as nil when absent or null).
    public static func number(_ name: StaticString, _ path: MemberPath<Root, Double?>) -> Self {
        Self(
            schema: MemberSchema(name, .number, required: true, nullable: true),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                if let value = root[keyPath: path] {
                    JSONWriter.number(JSONNumber(value), to: &out)
                } else {
                    JSONWriter.raw("null", to: &out)
                }
            },
            read: { root, json in
                root[keyPath: path] = json[name.description]?.numberValue?.doubleValue
                return true
            })
    }

    /// An object inside the result.
    public static func object<Value: JSONRecord>(
        _ name: StaticString, _ path: MemberPath<Root, Value>
    ) -> Self {
        Self(
            schema: MemberSchema(name, .object, required: true, members: Value.memberSchemas),
            write: { root, out, first in
                writeName(name, first: &first, to: &out)
                root[keyPath: path].write(to: &out)
            },
            read: { root, json in
                guard let member = json[name.description], let value = Value(json: member) else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// An object left out when nil.
    public static func object<Value: JSONRecord>(
        _ name: StaticString, _ path: MemberPath<Root, Value?>
    ) -> Self {
        Self(
            schema: MemberSchema(name, .object, required: false, members: Value.memberSchemas),
            write: { root, out, first in
                guard let value = root[keyPath: path] else { return }
                writeName(name, first: &first, to: &out)
                value.write(to: &out)
            },
            read: { root, json in
                guard let member = json[name.description] else {
                    root[keyPath: path] = nil
                    return true
                }
                guard let value = Value(json: member) else { return false }
                root[keyPath: path] = value
                return true
            })
    }

    /// An array of objects; with `omittedWhenEmpty`, left out when empty (and empty when absent).
    public static func objects<Element: JSONRecord>(
        _ name: StaticString, _ path: MemberPath<Root, [Element]>, omittedWhenEmpty: Bool = false
    ) -> Self {
        Self(
            schema: MemberSchema(name, .array, required: !omittedWhenEmpty, members: Element.memberSchemas),
            write: { root, out, first in
                let elements = root[keyPath: path]
                guard !(omittedWhenEmpty && elements.isEmpty) else { return }
                writeName(name, first: &first, to: &out)
                out.append(UInt8(ascii: "["))
                for (i, element) in elements.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    element.write(to: &out)
                }
                out.append(UInt8(ascii: "]"))
            },
            read: { root, json in
                guard let member = json[name.description] else {
                    root[keyPath: path] = []
                    return omittedWhenEmpty
                }
                guard let array = member.arrayValue else { return false }
                var elements: [Element] = []
                elements.reserveCapacity(array.count)
                for element in array {
                    guard let value = Element(json: element) else { return false }
                    elements.append(value)
                }
                root[keyPath: path] = elements
                return true
            })
    }
}

/// An array whose elements are all strings.
private func stringArray(_ json: JSON?) -> [String]? {
    guard let array = json?.arrayValue else { return nil }
    var strings: [String] = []
    strings.reserveCapacity(array.count)
    for element in array {
        guard let s = element.stringValue else { return nil }
        strings.append(s)
    }
    return strings
}

/// An integer, within `range` when one is given.
private func integerValue(_ json: JSON?, in range: ClosedRange<Int64>?) -> Int64? {
    guard let value = json?.numberValue?.int64Value, range?.contains(value) ?? true else { return nil }
    return value
}
