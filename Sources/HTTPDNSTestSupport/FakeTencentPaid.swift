import Foundation
import Glibc

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
    }

    public let port: Int
    private let directory = TemporaryDirectory(prefix: "tencent")
    private let process: ChildProcess

    /// `arguments` are the fake's options: `--des-key`, `--aes-key`, `--auth-id`, `--token`,
    /// `--certificate` and `--key` (see the script).
    public init(answers: [String: Record], arguments: [String]) throws {
        let answersPath = directory.file("answers.json")
        try JSONEncoder().encode(answers).write(to: URL(fileURLWithPath: answersPath))
        let script = BuiltProducts.packageRoot + "/Tests/fakes/tencent_paid.py"
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
            throw HarnessError("the Tencent fake did not start: \(log)")
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
