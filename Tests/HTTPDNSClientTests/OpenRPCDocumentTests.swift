import Foundation
import HTTPDNSProtocol
import Testing

/// rpc-schema/httpdnsd.openrpc.json is the single source of the wire contract.
struct OpenRPCDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: root.appendingPathComponent(relativePath)))
    }

    static func document() throws -> JSON {
        try JSONParser.parse(try bytes("rpc-schema/httpdnsd.openrpc.json"), maxDepth: 128)
    }

    static func methods() throws -> [JSON] {
        try #require(try document()["methods"]?.arrayValue)
    }

    /// The file with the whitespace between its tokens removed (what `.ci/embed-openrpc` embeds).
    static func compacted() throws -> [UInt8] {
        var compact: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in try bytes("rpc-schema/httpdnsd.openrpc.json") {
            if inString {
                compact.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == 0x22 {
                    inString = false
                }
            } else if byte == 0x22 {
                inString = true
                compact.append(byte)
            } else if ![0x20, 0x0A, 0x0D, 0x09].contains(byte) {
                compact.append(byte)
            }
        }
        return compact
    }

    /// The daemon embeds the document compacted (.ci/embed-openrpc); a stale copy fails here.
    @Test func serverEmbedsTheDocumentCompacted() throws {
        let compact = String(decoding: try Self.compacted(), as: UTF8.self)
        let embedded = String(decoding: try Self.bytes("Sources/HTTPDNSServer/OpenRPCDocument.swift"), as: UTF8.self)
        #expect(embedded.contains("##\"" + compact + "\"##"))
    }

    /// People read and edit the file: it is pretty-printed, one member per line.
    @Test func theFileIsPrettyPrinted() throws {
        let source = String(decoding: try Self.bytes("rpc-schema/httpdnsd.openrpc.json"), as: UTF8.self)
        #expect(source.hasPrefix("{\n  \"openrpc\": ") && source.hasSuffix("\n}\n"))
    }

    @Test func methodsAreExactlyTheProtocolsMethods() throws {
        let names = try Self.methods().compactMap { $0["name"]?.stringValue }
        #expect(names == Method.allCases.map(\.rawValue))
    }

    /// A reply is one line, so the daemon sends the compact form: re-encoding must lose nothing but
    /// the whitespace between tokens.
    @Test func compactFormIsTheFileWithoutInsignificantWhitespace() throws {
        let stripped = try Self.compacted()
        #expect(try Self.document().encoded == stripped)
        #expect(!stripped.contains(0x0A))
    }

    @Test func everyMethodIsByNameWithErrorsAndAnExample() throws {
        for method in try Self.methods() {
            let name = method["name"]?.stringValue ?? "?"
            #expect(method["paramStructure"] == "by-name", "\(name)")
            let errors: [JSON] = method["errors"]?.arrayValue ?? []
            let codes: [Int64] = errors.compactMap { error in error["code"]?.numberValue?.int64Value }
            #expect(codes.contains(Int64(RPCError.Code.internalError.rawValue)), "\(name) lacks -32603")
            let examples: [JSON] = method["examples"]?.arrayValue ?? []
            #expect(examples.count >= 1, "\(name) has no example")
        }
    }

    /// The examples agree with the Swift types both sides use: their params parse, their results decode.
    @Test func examplesMatchTheProtocolTypes() throws {
        for method in try Self.methods() {
            let name = try #require(method["name"]?.stringValue)
            let kind = try #require(Method(rawValue: name))
            for example in method["examples"]?.arrayValue ?? [] {
                var params = JSONObject()
                for param in example["params"]?.arrayValue ?? [] {
                    params.append(try #require(param["name"]?.stringValue), try #require(param["value"]))
                }
                let result = try #require(example["result"]?["value"])
                let label = "\(name) example \(example["name"]?.stringValue ?? "?")"
                do throws(RPCError) {
                    _ = try kind.paramsType.init(Params(params))
                    #expect(kind.resultType.init(json: result) != nil, "\(label)")
                } catch {
                    Issue.record("\(label): params rejected: \(error.message)")
                }
            }
        }
    }

    /// The Swift types write only what the document's schemas name, and everything they require:
    /// each example's params as a client sends them, and its result as the daemon writes it.
    @Test func typesWriteWhatTheSchemasDescribe() throws {
        for method in try Self.methods() {
            let name = try #require(method["name"]?.stringValue)
            let kind = try #require(Method(rawValue: name))
            let declared = (method["params"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
            let requiredParams = (method["params"]?.arrayValue ?? []).filter { $0["required"]?.boolValue == true }
                .compactMap { $0["name"]?.stringValue }
            let schema = method["result"]?["schema"]
            let properties = schema?["properties"]?.objectValue?.keys ?? []
            let requiredMembers = (schema?["required"]?.arrayValue ?? []).compactMap(\.stringValue)
            let closed = schema?["additionalProperties"]?.boolValue == false
            for example in method["examples"]?.arrayValue ?? [] {
                let label = "\(name) example \(example["name"]?.stringValue ?? "?")"
                var params = JSONObject()
                for param in example["params"]?.arrayValue ?? [] {
                    params.append(try #require(param["name"]?.stringValue), try #require(param["value"]))
                }
                do throws(RPCError) {
                    let sent = try kind.paramsType.init(Params(params)).json.keys
                    #expect(Set(sent).isSubset(of: declared), "\(label): params \(sent) beyond \(declared)")
                    #expect(Set(requiredParams).isSubset(of: sent), "\(label): a required param is not sent")
                } catch {
                    Issue.record("\(label): params rejected: \(error.message)")
                }
                let value = try #require(example["result"]?["value"])
                let resultType = kind.resultType
                let decoded = resultType.init(json: value)
                let result = try #require(decoded, "\(label)")
                let written = try #require(result.json.objectValue?.keys, "\(label): not an object")
                if closed {
                    #expect(Set(written).isSubset(of: properties), "\(label): writes \(written) beyond \(properties)")
                }
                #expect(Set(requiredMembers).isSubset(of: written), "\(label): a required member is not written")
            }
        }
    }

    /// Each method's description (its params and result types' member tables, from which their
    /// codec is derived) says what the document says: the same param names, required flags, types,
    /// integer bounds and string sets; the same result members, with their types, required ones
    /// and nested members.
    @Test(arguments: Method.allCases)
    func descriptionsMatchTheDocument(_ kind: Method) throws {
        let method = try #require(try Self.methods().first { $0["name"]?.stringValue == kind.rawValue })
        let documented = method["params"]?.arrayValue ?? []
        let params = kind.paramsType.memberSchemas
        #expect(Set(params.map(\.name)) == Set(documented.compactMap { $0["name"]?.stringValue }), "\(kind)")
        #expect(params.count == documented.count, "\(kind): a param described twice")
        for member in params {
            let param = try #require(documented.first { $0["name"]?.stringValue == member.name }, "\(kind)")
            let label = "\(kind.rawValue).\(member.name)"
            #expect((param["required"]?.boolValue ?? false) == member.required, "\(label): required")
            let schema = try #require(param["schema"])
            #expect(schema["type"]?.stringValue == member.type.rawValue, "\(label): type")
            let minimum = schema["minimum"]?.numberValue?.int64Value
            let maximum = schema["maximum"]?.numberValue?.int64Value
            #expect(minimum == member.range?.lowerBound && maximum == member.range?.upperBound, "\(label): bounds")
            #expect(schema["enum"]?.arrayValue?.compactMap(\.stringValue) == member.values, "\(label): values")
        }
        let described = kind.resultType.memberSchemas
        let result = try #require(described, "\(kind): the result is not described")
        Self.check(result, against: try #require(method["result"]?["schema"]), at: kind.rawValue)
    }

    /// The cookie record's table is the document's cookie schema (listCookies' items), member for
    /// member and in the order the daemon writes them.
    @Test func cookieTableIsTheDocumentsCookieSchema() throws {
        let listCookies = try #require(try Self.methods().first { $0["name"]?.stringValue == "listCookies" })
        let items = try #require(listCookies["result"]?["schema"]?["properties"]?["cookies"]?["items"])
        let documented = try #require(items["properties"]?.objectValue).keys
        #expect(Cookie.fields.map(\.schema.name) == Array(documented))
        Self.check(try #require(Cookie.memberSchemas), against: items, at: "Cookie")
    }

    /// Members described against an object schema, and the nested ones against theirs (the
    /// cookies `listCookies` shows against its Cookie schema among them).
    static func check(_ members: [MemberSchema], against schema: JSON, at path: String) {
        let properties = schema["properties"]?.objectValue ?? JSONObject()
        let required = Set((schema["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        #expect(Set(members.map(\.name)) == Set(properties.keys), "\(path): members")
        // The document requires exactly the members the daemon always writes (null when unknown
        // for a nullable one), so a client may count on each.
        #expect(required == Set(members.filter(\.required).map(\.name)), "\(path): required members")
        for member in members {
            guard let property = properties[member.name] else { continue }
            let label = "\(path).\(member.name)"
            let type: JSON = member.nullable ? [.string(member.type.rawValue), "null"] : .string(member.type.rawValue)
            #expect(property["type"] == type, "\(label): type")
            if let values = member.values {
                #expect(property["enum"]?.arrayValue?.compactMap(\.stringValue) == values, "\(label): values")
            }
            guard let nested = member.members else {
                // An object the document describes member by member is described by a table too
                // (a record written by hand could drift from it unseen).
                let object = member.type == .array ? property["items"] : property
                #expect(object?["properties"] == nil, "\(label): its members are not described")
                continue
            }
            switch member.type {
            case .object: check(nested, against: property, at: label)
            case .array:
                if let items = property["items"] { check(nested, against: items, at: label + "[]") }
            default: Issue.record("\(label): members of a \(member.type)")
            }
        }
    }
}
