import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The request path's fast lane against the tree: same request or same error, on every input.
struct RequestScannerTests {
    static func verdict(_ text: String) -> ScannerVerdict {
        Array(text.utf8).withUnsafeBufferPointer(compareScannerWithDecoder)
    }

    static func scan(_ text: String) -> (id: RPCID?, method: Method, params: any MethodParams)? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { line in
            var scanner = RequestScanner()
            guard let request = scanner.scan(line) else { return nil }
            guard let params = try? request.method.paramsType.init(request.params) else { return nil }
            return (request.id, request.method, params)
        }
    }

    /// The hot methods as clients send them go the fast lane, with the values the tree would give.
    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"localhost","family":"ipv4"}}"#,
        #"{"jsonrpc":"2.0","id":"a b","method":"getCookieHeader","params":{"url":"https://a.example.com/app","host":"a.example.com","forScript":true}}"#,
        #"{"jsonrpc":"2.0","id":7,"method":"handleSetCookie","params":{"url":"https://a.example.com/","setCookie":["sid=\"x\"; Path=/","b=\u00e9"]}}"#,
        #"{"jsonrpc":"2.0","id":null,"method":"status"}"#,
        #"{"jsonrpc":"2.0","method":"status","params":null}"#,
        #" { "params" : { "host" : "h" } , "method" : "resolve" , "id" : -1.5e3 , "jsonrpc" : "2.0" } "#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"a","host":"b","x":{"y":[1,{"z":null}]}}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"rpc.discover","params":{}}"#,
    ])
    func commonRequestsTakeTheFastLane(_ line: String) throws {
        guard case .agreed = Self.verdict(line) else {
            Issue.record("\(line): \(Self.verdict(line))")
            return
        }
    }

    @Test func valuesAreTheTreesValues() throws {
        let resolve = try #require(
            Self.scan(
                #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"a","host":"b\u00e9","timeoutMs":250}}"#))
        #expect(resolve.id == .number(JSONNumber(1)))
        #expect(resolve.params as? ResolveParams == ResolveParams(host: "bé", timeoutMs: 250))
        let set = try #require(
            Self.scan(
                #"{"jsonrpc":"2.0","id":"q","method":"handleSetCookie","params":{"url":"u","setCookie":[ "a=\"b\"" , "c" ]}}"#
            ))
        #expect(set.id == .string("q"))
        #expect(set.params as? HandleSetCookieParams == HandleSetCookieParams(url: "u", setCookie: [#"a="b""#, "c"]))
        let notification = try #require(Self.scan(#"{"method":"status","jsonrpc":"2.0"}"#))
        #expect(notification.id == nil)
    }

    /// What the scanner leaves to the decoder: anything but a plainly valid single request.
    @Test(arguments: [
        #"[{"jsonrpc":"2.0","id":1,"method":"status"}]"#,
        #"{"jsonrpc":"2.0","id":1,"method":"noSuchMethod"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"st\u0061tus"}"#,
        #"{"jsonrpc":"2\u002e0","id":1,"method":"status"}"#,
        #"{"jsonrpc":"2.0","\u0069d":1,"method":"status"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"h\u006fst":"a"}}"#,
        #"{"jsonrpc":"2.0","id":{},"method":"status"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"status","params":[1]}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"status","params":"x"}"#,
        #"{"jsonrpc":"1.0","id":1,"method":"status"}"#,
        #"{"id":1,"method":"status"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"status"} x"#,
        #"{"jsonrpc":"2.0","id":1,"method":"status""#,
        "{}",
        "",
    ])
    func theRestIsTheDecodersToAnswer(_ line: String) {
        guard case .declined = Self.verdict(line) else {
            Issue.record("\(line): \(Self.verdict(line))")
            return
        }
    }

    /// Params errors come from the same parser whichever lane read the line.
    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":5}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"a","host":null}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"a","timeoutMs":1.0}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"handleSetCookie","params":{"url":"u","setCookie":["a",{"b":1}]}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"deleteCookies","params":{"url":"u","all":true}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"importCookies","params":{"format":"json","data":""}}"#,
    ])
    func paramsErrorsAreTheSame(_ line: String) throws {
        guard case .agreed = Self.verdict(line) else {
            Issue.record("\(line): \(Self.verdict(line))")
            return
        }
    }

    /// Seeded differential fuzzing: generated requests of every method, then the same mutated.
    @Test func fastLaneAndTreeAgreeOnEveryInput() {
        var generator = RequestLineGenerator(seed: 0x5343_414E_4E45_5201)
        var agreed = 0
        var declined = 0
        for round in 0..<12_000 {
            var line = generator.line()
            if round % 2 == 1 { line = ProtocolFuzzTests.mutate(line, &generator.rng) }
            switch line.withUnsafeBufferPointer(compareScannerWithDecoder) {
            case .agreed: agreed += 1
            case .declined: declined += 1
            case .disagreed(let how):
                Issue.record("\(how): \(String(decoding: line, as: UTF8.self)) \(line)")
                return
            }
        }
        // The generator mostly writes requests the fast lane takes: it must not decline them all.
        #expect(agreed > 2_500, "agreed \(agreed), declined \(declined)")
    }
}

/// Request lines as clients write them, and as hostile ones do: every method with its members
/// in any order and spacing, escapes, duplicates, nulls, wrong types, unknown members.
struct RequestLineGenerator {
    var rng: SeededGenerator
    private var values: JSONGenerator

    init(seed: UInt64) {
        rng = SeededGenerator(state: seed)
        values = JSONGenerator(seed: seed ^ 0xFFFF)
    }

    static let fields: [Method: [(String, String)]] = [
        .resolve: [("host", "s"), ("family", "family"), ("allowStale", "b"), ("timeoutMs", "ms")],
        .reverse: [("address", "s")],
        .getCookieHeader: [
            ("url", "s"), ("host", "s"), ("forScript", "b"), ("siteForCookies", "s"), ("topLevelNavigation", "b"),
        ],
        .handleSetCookie: [("url", "s"), ("host", "s"), ("setCookie", "strings")],
        .deleteCookies: [("url", "s"), ("host", "s"), ("domain", "s"), ("all", "b"), ("name", "s")],
        .listCookies: [("domain", "s")],
        .importCookies: [("format", "format"), ("data", "s")],
        .exportCookies: [("format", "format")],
        .flushCache: [("host", "s")],
        .status: [],
        .showCache: [],
        .statistics: [],
        .resetStatistics: [],
        .metrics: [],
        .monitor: [],
        .discover: [],
    ]

    mutating func space() -> String {
        [" ", "", "", "", "\t", "  ", "\r", "\n"].randomElement(using: &rng)!
    }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    /// A string literal: plain mostly, with escapes or raw UTF-8 sometimes.
    mutating func stringLiteral(_ plain: String? = nil) -> String {
        if let plain, !chance(20) { return "\"" + plain + "\"" }
        if chance(50) { return JSON.string(values.string()).encodedString }
        let pieces = ["a", "é", "😀", #"\""#, #"\\"#, #"\/"#, #"\n"#, #"\u00e9"#, #"\ud83d\ude00"#, "x.y", " "]
        return "\""
            + (0..<Int.random(in: 0...5, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }
            .joined() + "\""
    }

    mutating func value(kind: String) -> String {
        if chance(8) { return "null" }
        if chance(8) { return values.value(depth: 3).encodedString }
        switch kind {
        case "s":
            return stringLiteral(
                ["a.example.com", "https://a.example.com/p", "192.0.2.1", ""].randomElement(using: &rng)!)
        case "b": return chance(50) ? "true" : "false"
        case "family": return stringLiteral(["ipv4", "ipv6", "both", "IPv4"].randomElement(using: &rng)!)
        case "format": return stringLiteral(["netscape", "json"].randomElement(using: &rng)!)
        case "ms":
            return ["1", "250", "60000", "0", "60001", "1.0", "1e3", "-0", "99999999999999999999"].randomElement(
                using: &rng)!
        default:
            let elements = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                chance(90) ? stringLiteral("a=b; Path=/") : values.value(depth: 4).encodedString
            }
            return "[" + space() + elements.joined(separator: space() + "," + space()) + space() + "]"
        }
    }

    mutating func member(_ name: String, _ value: String) -> String {
        let quotedName = chance(3) ? JSON.string(name).encodedString.replacingFirst("\"", "\"\\u0020") : "\"\(name)\""
        return space() + quotedName + space() + ":" + space() + value + space()
    }

    mutating func line() -> [UInt8] {
        let method = Method.allCases.randomElement(using: &rng)!
        var members: [String] = []
        if !chance(3) {
            members.append(
                member(
                    "jsonrpc", chance(95) ? #""2.0""# : ["2.0", #""1.0""#, #""2\u002e0""#].randomElement(using: &rng)!))
        }
        if !chance(15) {
            let ids = [
                "1", "-7", "1.5e3", "null", #""x""#, #""\u0041""#, "{}", "true", "123456789012345678901234567890",
            ]
            members.append(member("id", ids.randomElement(using: &rng)!))
        }
        let methodName = chance(95) ? "\"\(method.rawValue)\"" : stringLiteral("nope")
        members.append(member("method", methodName))
        if !chance(10) {
            var params: [String] = []
            for (name, kind) in Self.fields[method] ?? [] where chance(70) {
                params.append(member(name, value(kind: kind)))
            }
            if chance(20) { params.append(member("extra", values.value(depth: 2).encodedString)) }
            if chance(10), let (name, kind) = Self.fields[method]?.randomElement(using: &rng) {
                params.append(member(name, value(kind: kind)))
            }
            params.shuffle(using: &rng)
            let object = "{" + params.joined(separator: ",") + "}"
            members.append(member("params", chance(95) ? object : ["null", "[]", #""p""#].randomElement(using: &rng)!))
        }
        if chance(15) { members.append(member(chance(50) ? "extra" : "id", values.value(depth: 1).encodedString)) }
        members.shuffle(using: &rng)
        return Array((space() + "{" + members.joined(separator: ",") + "}" + space()).utf8)
    }
}

extension String {
    fileprivate func replacingFirst(_ target: Character, _ replacement: String) -> String {
        guard let position = firstIndex(of: target) else { return self }
        return String(self[..<position]) + replacement + String(self[self.index(after: position)...])
    }
}
