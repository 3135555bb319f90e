import Foundation
import Testing

/// Issue 43: what differs between the upstream kinds is their descriptors'. Outside the one
/// mapping from kind and form to descriptor, the sources of the resolver (HTTPDNSCore) and the
/// daemon (HTTPDNSServer) never switch on, compare or name an upstream kind. Parsing the kind's
/// name (`Kind(rawValue:)`) and reading its `rawValue` are not looking at it.
struct UpstreamKindSwitchTests {
    /// The files that may look at the kind, relative to the package root.
    static let allowed: Set<String> = ["Sources/HTTPDNSCore/Config/UpstreamEndpoint+Descriptor.swift"]
    static let scanned = ["Sources/HTTPDNSCore", "Sources/HTTPDNSServer"]

    static let kinds = "(alibaba|tencent|doh|dohJSON|system)"
    /// Each tied to the upstream kind's cases or to a member called `kind`, so that other enums'
    /// `.system` (a socket choice, an answer's source) and other `kind`s (an HTTP framing, a
    /// config problem's) are not taken for it.
    static let patterns: [(String, String)] = [
        ("a case of the kind", #"\bcase\s+(let\s+)?\.\#(kinds)\b"#),
        ("a kind compared with a case", #"\bkind\s*[!=]=\s*\.\#(kinds)\b"#),
        ("a case compared with a kind", #"\.\#(kinds)\s*[!=]=\s*[\w.\[\]]*\bkind\b"#),
        ("two kinds compared", #"\.kind\s*[!=]=\s*[\w.\[\]]*\.kind\b"#),
        ("a switch on a kind", #"\bswitch\s+[^{]*\.kind\b"#),
        ("a kind's case named", #"(^|[^\w)\]?!.])\.(alibaba|tencent|doh|dohJSON)\b"#),
        ("a kind's case named", #"\bKind\.\#(kinds)\b"#),
    ]

    /// What in `text` looks at the upstream kind: one "line: what" per line, comments skipped.
    static func findings(in text: String) throws -> [String] {
        let compiled = try patterns.map { ($0.0, try Regex($0.1)) }
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.drop { $0 == " " }
            if code.hasPrefix("//") { continue }
            for (what, regex) in compiled where code.contains(regex) {
                found.append("\(number + 1): \(what): \(code)")
                break
            }
        }
        return found
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test func noSourceOutsideTheDescriptorMappingLooksAtTheKind() throws {
        let root = Self.packageRoot
        var scannedFiles = 0
        var found: [String] = []
        for directory in Self.scanned {
            let base = root.appendingPathComponent(directory)
            let enumerator = try #require(FileManager.default.enumerator(atPath: base.path))
            for case let file as String in enumerator where file.hasSuffix(".swift") {
                // One huge embedded line, and no Swift of the resolver's.
                if file.hasSuffix("OpenRPCDocument.swift") { continue }
                let relative = "\(directory)/\(file)"
                if Self.allowed.contains(relative) { continue }
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                scannedFiles += 1
                found += try Self.findings(in: text).map { "\(relative):\($0)" }
            }
        }
        #expect(scannedFiles > 100, "the sources were not found under \(root.path)")
        #expect(found.isEmpty, "ask the endpoint's descriptor instead:\n\(found.joined(separator: "\n"))")
        for file in Self.allowed {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(file).path), "\(file)")
        }
    }

    @Test func theCheckCatchesKindDispatch() throws {
        let caught = [
            "        switch request.endpoint.kind {",
            "        case .alibaba where settings.alibabaAPI == .v2:",
            "        case .doh, .dohJSON, .system:",
            "        if case .tencent = endpoint.kind { return }",
            "        if request.endpoint.kind == .tencent {",
            "        guard settings.upstreams[$0].kind != .system else { continue }",
            "        let region = .alibaba == endpoint.kind ? region : nil",
            "        if kinds.contains(.alibaba) {",
            "        let batches = [UpstreamEndpoint.Kind.tencent]",
            "        if a.kind == b.kind { continue }",
        ]
        for line in caught {
            #expect(try Self.findings(in: line).count == 1, "\(line)")
        }
    }

    @Test func theCheckLeavesOtherKindsAndSystemsAlone() throws {
        let left = [
            "        if problem.kind == .missingEquals, let section = problem.section {",
            "        switch kind {",
            "        let account = configuration.resolver.tencent",
            "        index == -1 ? .system : retiredUpstreams[-2 - index]",
            "        source: endpoint.descriptor.answerSource),",
            "        guard let kind = UpstreamEndpoint.Kind(rawValue: words[0].lowercased()) else {",
            "        let key = endpoint.kind.rawValue + \" \" + (endpoint.url ?? \"\")",
            "        settings.dohPost ? .post : .get",
            "    /// Alibaba's `case .alibaba` in a comment",
        ]
        #expect(try Self.findings(in: left.joined(separator: "\n")).isEmpty)
    }
}
