/// `Tests/fakes/alibaba_v2.py` on 127.0.0.1 (a kernel-chosen port), and the requests it logged.
public final class FakeAlibabaV2 {
    /// A name's addresses, as the Tencent fake takes them.
    public typealias Record = FakeTencentPaid.Record

    /// One logged request: its query (as received), the names it asked, the status and code
    /// answered.
    public struct Request: Decodable, Sendable {
        public var path: String
        public var query: [String: String]
        public var names: [String]?
        public var status: Int
        public var code: String
        /// `dn`, `q`, `cip` and `sdns-*` as the service read them (decrypted from `enc`).
        public var parameters: [String: String]?
    }

    private let fake: ScriptedFakeUpstream
    public var port: Int { fake.port }

    /// `arguments` are the fake's options besides the answers: `--account`, `--secret`,
    /// `--clock-ahead` (see the script).
    public init(answers: [String: Record], arguments: [String]) throws {
        fake = try ScriptedFakeUpstream(
            script: "alibaba_v2.py", name: "Alibaba v2", answers: answers, arguments: arguments)
    }

    public var requests: [Request] { fake.requests(as: Request.self) }
}
