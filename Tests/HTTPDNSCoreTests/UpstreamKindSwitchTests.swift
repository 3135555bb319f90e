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

    /// The patterns, simple word boundaries: Unicode's would not break `endpoint.kind` at the dot.
    static func compiled() throws -> [(String, Regex<AnyRegexOutput>)] {
        try patterns.map { ($0.0, try Regex($0.1).wordBoundaryKind(.simple)) }
    }

    /// What in `text` looks at the upstream kind: one "line: what: code" per line, comments skipped.
    static func findings(in text: String) throws -> [String] {
        let compiled = try compiled()
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.drop { $0 == " " }
            if code.hasPrefix("//") { continue }
            if let (what, _) = compiled.first(where: { code.contains($0.1) }) {
                found.append("\(number + 1): \(what): \(code)")
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

    /// Each pattern catches what it is for (and every pattern is needed by one of these).
    @Test func theCheckCatchesKindDispatch() throws {
        let caught = [
            ("        switch request.endpoint.kind {", "a switch on a kind"),
            ("        case .alibaba where settings.alibabaAPI == .v2:", "a case of the kind"),
            ("        case .doh, .dohJSON, .system:", "a case of the kind"),
            ("        if case .tencent = endpoint.kind { return }", "a case of the kind"),
            ("        if request.endpoint.kind == .tencent {", "a kind compared with a case"),
            ("        guard settings.upstreams[$0].kind != .system else { continue }", "a kind compared with a case"),
            ("        let local = .system == upstream.kind", "a case compared with a kind"),
            ("        if a.kind == b.kind { continue }", "two kinds compared"),
            ("        if kinds.contains(.alibaba) {", "a kind's case named"),
            ("        let batches = [UpstreamEndpoint.Kind.system]", "a kind's case named"),
        ]
        let compiled = try Self.compiled()
        for (line, what) in caught {
            let matching = compiled.filter { line.contains($0.1) }.map(\.0)
            #expect(matching.contains(what), "\(line): \(matching)")
            #expect(try Self.findings(in: line).count == 1, "\(line)")
        }
        let used = Set(caught.map(\.1))
        #expect(Set(Self.patterns.map(\.0)) == used)
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
