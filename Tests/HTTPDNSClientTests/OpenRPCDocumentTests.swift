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

    /// The daemon embeds the document (scripts/embed-openrpc); a stale copy fails here.
    @Test func serverEmbedsTheDocumentUnchanged() throws {
        let source = String(decoding: try Self.bytes("rpc-schema/httpdnsd.openrpc.json"), as: UTF8.self)
        let embedded = String(decoding: try Self.bytes("Sources/HTTPDNSServer/OpenRPCDocument.swift"), as: UTF8.self)
        #expect(source.hasSuffix("\n") && source.filter { $0 == "\n" }.count == 1, "one line of compact JSON")
        #expect(embedded.contains("##\"" + source.dropLast() + "\"##"))
    }

    @Test func methodsAreExactlyTheProtocolsMethods() throws {
        let names = try Self.methods().compactMap { $0["name"]?.stringValue }
        #expect(names == Method.allCases.map(\.rawValue))
    }

    /// A reply is one line, so the daemon sends the compact form: re-encoding must lose nothing but
    /// the whitespace between tokens.
    @Test func compactFormIsTheFileWithoutInsignificantWhitespace() throws {
        let source = try Self.bytes("rpc-schema/httpdnsd.openrpc.json")
        var stripped: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in source {
            if inString {
                stripped.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == 0x22 {
                    inString = false
                }
            } else if byte == 0x22 {
                inString = true
                stripped.append(byte)
            } else if ![0x20, 0x0A, 0x0D, 0x09].contains(byte) {
                stripped.append(byte)
            }
        }
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
}
