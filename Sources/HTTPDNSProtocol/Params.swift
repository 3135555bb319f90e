/// Typed access to a `params` object. Each accessor throws -32602 naming the member, so a
/// method's parser reads like the list of its fields (systemd's dispatch-table habit).
public struct Params {
    public let object: JSONObject

    public init(_ object: JSONObject) { self.object = object }

    public func requiredString(_ field: String) throws(RPCError) -> String {
        guard let value = object[field], !value.isNull else { throw .invalidParams(field: field, "is required") }
        guard let s = value.stringValue else {
            throw .invalidParams(field: field, "must be a string, not \(value.typeName)")
        }
        return s
    }

    public func optionalString(_ field: String) throws(RPCError) -> String? {
        guard let value = object[field], !value.isNull else { return nil }
        guard let s = value.stringValue else {
            throw .invalidParams(field: field, "must be a string, not \(value.typeName)")
        }
        return s
    }

    public func optionalBool(_ field: String) throws(RPCError) -> Bool? {
        guard let value = object[field], !value.isNull else { return nil }
        guard let b = value.boolValue else {
            throw .invalidParams(field: field, "must be a boolean, not \(value.typeName)")
        }
        return b
    }

    /// An integer within `range` (fractions and exponents are rejected).
    public func optionalInt(_ field: String, in range: ClosedRange<Int64>) throws(RPCError) -> Int64? {
        guard let value = object[field], !value.isNull else { return nil }
        guard let number = value.numberValue else {
            throw .invalidParams(field: field, "must be an integer, not \(value.typeName)")
        }
        guard let int = number.int64Value else { throw .invalidParams(field: field, "must be an integer") }
        guard range.contains(int) else {
            throw .invalidParams(field: field, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return int
    }

    public func requiredStringArray(_ field: String) throws(RPCError) -> [String] {
        guard let value = object[field], !value.isNull else { throw .invalidParams(field: field, "is required") }
        guard let elements = value.arrayValue else {
            throw .invalidParams(field: field, "must be an array of strings, not \(value.typeName)")
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
    }

    /// One of a fixed set of strings.
    public func optionalEnum<E: RawRepresentable<String>>(_ field: String, _ type: E.Type) throws(RPCError) -> E? {
        guard let raw = try optionalString(field) else { return nil }
        guard let value = E(rawValue: raw) else { throw .invalidParams(field: field, "unknown value \"\(raw)\"") }
        return value
    }
}
