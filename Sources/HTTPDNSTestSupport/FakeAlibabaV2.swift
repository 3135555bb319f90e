import Foundation
import Glibc

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
    }

    public let port: Int
    private let directory = TemporaryDirectory(prefix: "alibaba-v2")
    private let process: ChildProcess

    /// `arguments` are the fake's options besides the answers: `--account`, `--secret`,
    /// `--clock-ahead` (see the script).
    public init(answers: [String: Record], arguments: [String]) throws {
        let answersPath = directory.file("answers.json")
        try JSONEncoder().encode(answers).write(to: URL(fileURLWithPath: answersPath))
        let script = BuiltProducts.packageRoot + "/Tests/fakes/alibaba_v2.py"
        let portPath = directory.file("port")
        let server = try ChildProcess(
            "/usr/bin/python3", [script, answersPath, directory.file("requests.log")] + arguments, stdout: portPath,
            stderr: directory.file("stderr"))
        process = server
        var port: Int?
        _ = eventually(15) {
            let text = (try? String(contentsOfFile: portPath, encoding: .utf8)) ?? ""
            if text.hasSuffix("\n") { port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return port != nil || !server.isRunning
        }
        guard let port else {
            let log = (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? ""
            throw HarnessError("the Alibaba v2 fake did not start: \(log)")
        }
        self.port = port
    }

    public var requests: [Request] {
        let text = (try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Request.self, from: Data($0.utf8)) }
    }

    deinit {
        // SIGKILL: the child may inherit a signal mask that blocks SIGTERM.
        process.signal(SIGKILL)
        _ = process.wait(timeout: 5)
    }
}
