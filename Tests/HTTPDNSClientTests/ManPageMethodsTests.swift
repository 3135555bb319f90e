import Foundation
import HTTPDNSProtocol
import Testing

/// httpdnsd-rpc(7)'s METHODS section against the OpenRPC document: a section per method and no
/// other, each naming every param as an item and every member its result always has.
struct ManPageMethodsTests {
    /// METHODS' subsections by name (`\-` read as `-`).
    static func sections() throws -> [String: String] {
        let page = String(decoding: try OpenRPCDocumentTests.bytes("packaging/man/httpdnsd-rpc.7"), as: UTF8.self)
        let start = try #require(page.range(of: "\n.SH METHODS\n"))
        let end = try #require(page.range(of: "\n.SH ", range: start.upperBound..<page.endIndex))
        var sections: [String: String] = [:]
        for chunk in ("\n" + page[start.upperBound..<end.lowerBound]).components(separatedBy: "\n.SS ").dropFirst() {
            let title = chunk.prefix { $0 != "\n" }.replacingOccurrences(of: "\\-", with: "-")
            sections[title.trimmingCharacters(in: .whitespaces)] = String(chunk)
        }
        return sections
    }

    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    /// Whether `text` holds `word` between non-word characters.
    static func mentions(_ text: String, _ word: String) -> Bool {
        var searchFrom = text.startIndex
        while let found = text.range(of: word, range: searchFrom..<text.endIndex) {
            let before = found.lowerBound == text.startIndex ? nil : text[text.index(before: found.lowerBound)]
            let after = found.upperBound == text.endIndex ? nil : text[found.upperBound]
            let isWord = { (c: Character?) in c.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false }
            if !isWord(before) && !isWord(after) { return true }
            searchFrom = found.upperBound
        }
        return false
    }

    @Test func everyMethodHasItsSectionAndNoOtherSectionIsThere() throws {
        let documented = Set(try OpenRPCDocumentTests.methods().compactMap { $0["name"]?.stringValue })
        #expect(Set(try Self.sections().keys) == documented)
        #expect(documented == Set(Method.allCases.map(\.rawValue)))
    }

    @Test(arguments: Method.allCases)
    func aSectionNamesEveryParamAndEveryResultMember(_ method: Method) throws {
        let section = try #require(try Self.sections()[method.rawValue], "no .SS \(method.rawValue)")
        let described = try MethodShapeTests.method(method)
        for param in described["params"]?.arrayValue ?? [] {
            let name = try #require(param["name"]?.stringValue)
            let asItem = Self.lines(section).contains { $0.hasPrefix(".BR \(name) ") || $0 == ".B \(name)" }
            #expect(asItem, "\(method.rawValue): param \(name) is not an item of its section")
        }
        for member in described["result"]?["schema"]?["required"]?.arrayValue ?? [] {
            let name = try #require(member.stringValue)
            #expect(Self.mentions(section, name), "\(method.rawValue): result member \(name) is not described")
        }
    }
}
