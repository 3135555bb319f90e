/// `Tests/fakes/tencent_paid.py` on 127.0.0.1 (a kernel-chosen port), and the requests it logged.
public final class FakeTencentPaid {
    public struct Record: Encodable, Sendable {
        public var v4: [String]
        public var v6: [String]
        public var ttl: Int

        public init(v4: [String], v6: [String], ttl: Int) {
            self.v4 = v4
            self.v6 = v6
            self.ttl = ttl
        }
    }

    /// One logged request: its query (as received), the cipher named, the names it decrypted
    /// to, and the status answered.
    public struct Request: Decodable, Sendable {
        public var path: String
        public var query: [String: String]
        public var alg: String?
        public var names: [String]
        public var status: Int
        /// `ip=` as the service read it (decrypted in the encrypted forms).
        public var ip: String?
    }

    private let fake: ScriptedFakeUpstream
    public var port: Int { fake.port }

    /// `arguments` are the fake's options: `--des-key`, `--aes-key`, `--auth-id`, `--token`,
    /// `--certificate` and `--key` (see the script).
    public init(answers: [String: Record], arguments: [String]) throws {
        fake = try ScriptedFakeUpstream(
            script: "tencent_paid.py", name: "Tencent", answers: answers, arguments: arguments)
    }

    public var requests: [Request] { fake.requests(as: Request.self) }
}
