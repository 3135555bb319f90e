import HTTPDNSProtocol

/// A JSON Schema checker for the keywords the OpenRPC document uses, and only those: a keyword
/// it does not know is itself a finding, so the document cannot outgrow the check unnoticed.
struct SchemaChecker {
    /// Keywords that constrain a value.
    static let constraints: Set<String> = [
        "type", "enum", "const", "minimum", "maximum", "minLength", "minItems", "items", "required", "properties",
        "additionalProperties", "format",
    ]
    /// Keywords that only annotate.
    static let annotations: Set<String> = ["description", "default", "title", "examples"]

    /// Every way `value` violates `schema`, as "path: reason" lines (empty when it conforms).
    static func violations(of value: JSON, against schema: JSON, at path: String = "$") -> [String] {
        guard let schema = schema.objectValue else { return ["\(path): the schema is not an object"] }
        var found: [String] = []
        for key in schema.keys where !constraints.contains(key) && !annotations.contains(key) {
            found.append("\(path): unknown schema keyword \(key)")
        }
        if let type = schema["type"] {
            let allowed = type.arrayValue?.compactMap(\.stringValue) ?? type.stringValue.map { [$0] } ?? []
            if !allowed.contains(where: { matches(value, type: $0) }) {
                found.append("\(path): a \(value.typeName), not \(allowed.joined(separator: " or "))")
                return found
            }
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            found.append("\(path): \(value.encodedString) is not one of \(JSON.array(options).encodedString)")
        }
        if let constant = schema["const"], constant != value {
            found.append("\(path): \(value.encodedString) is not \(constant.encodedString)")
        }
        if let number = value.numberValue?.doubleValue {
            if let minimum = schema["minimum"]?.numberValue?.doubleValue, number < minimum {
                found.append("\(path): \(number) < \(minimum)")
            }
            if let maximum = schema["maximum"]?.numberValue?.doubleValue, number > maximum {
                found.append("\(path): \(number) > \(maximum)")
            }
        }
        if let string = value.stringValue {
            if let minLength = schema["minLength"]?.numberValue?.int64Value, string.unicodeScalars.count < minLength {
                found.append("\(path): shorter than \(minLength)")
            }
            if let format = schema["format"]?.stringValue, !conforms(string, format: format) {
                found.append("\(path): \"\(string)\" is not \(format)")
            }
        }
        if let elements = value.arrayValue {
            if let minItems = schema["minItems"]?.numberValue?.int64Value, elements.count < minItems {
                found.append("\(path): fewer than \(minItems) items")
            }
            if let items = schema["items"] {
                for (i, element) in elements.enumerated() {
                    found += violations(of: element, against: items, at: "\(path)[\(i)]")
                }
            }
        }
        if let object = value.objectValue {
            for name in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where object[name] == nil {
                found.append("\(path): \(name) is missing")
            }
            let properties = schema["properties"]?.objectValue ?? JSONObject()
            for member in object {
                if let property = properties[member.key] {
                    found += violations(of: member.value, against: property, at: "\(path).\(member.key)")
                } else if schema["additionalProperties"] == false {
                    found.append("\(path): \(member.key) is not in the schema")
                }
            }
        }
        return found
    }

    private static func matches(_ value: JSON, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object),
            ("number", .number):
            return true
        case ("integer", .number(let n)):
            return n.int64Value != nil
        default:
            return false
        }
    }

    private static func conforms(_ string: String, format: String) -> Bool {
        switch format {
        case "ipv4":
            let parts = string.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4 && parts.allSatisfy { part in UInt8(part) != nil && part.count <= 3 }
        case "ipv6":
            return string.contains(":") && string.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        default:
            return true
        }
    }
}
