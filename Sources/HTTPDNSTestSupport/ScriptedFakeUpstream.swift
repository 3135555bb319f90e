import Foundation
import Glibc

/// A provider fake of `Tests/fakes/` on 127.0.0.1: the script is given the answers file, its
/// request log and `arguments`, and prints the kernel-chosen port when it listens. Each logged
/// request is one JSON line.
public final class ScriptedFakeUpstream {
    public let port: Int
    private let directory: TemporaryDirectory
    private let process: ChildProcess

    /// `name` names the fake in the error when it does not start.
    public init(script: String, name: String, answers: some Encodable, arguments: [String]) throws {
        directory = TemporaryDirectory(prefix: "fake-upstream")
        let answersPath = directory.file("answers.json")
        try JSONEncoder().encode(answers).write(to: URL(fileURLWithPath: answersPath))
        let portPath = directory.file("port")
        let server = try ChildProcess(
            "/usr/bin/python3",
            [BuiltProducts.packageRoot + "/Tests/fakes/" + script, answersPath, directory.file("requests.log")]
                + arguments,
            stdout: portPath, stderr: directory.file("stderr"))
        process = server
        var port: Int?
        _ = eventually(15) {
            let text = (try? String(contentsOfFile: portPath, encoding: .utf8)) ?? ""
            if text.hasSuffix("\n") { port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return port != nil || !server.isRunning
        }
        guard let port else {
            let log = (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? ""
            throw HarnessError("the \(name) fake did not start: \(log)")
        }
        self.port = port
    }

    /// The requests logged so far.
    public func requests<Request: Decodable>(as: Request.Type) -> [Request] {
        let text = (try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Request.self, from: Data($0.utf8)) }
    }

    deinit {
        // SIGKILL: the child may inherit a signal mask that blocks SIGTERM.
        process.signal(SIGKILL)
        _ = process.wait(timeout: 5)
    }
}
