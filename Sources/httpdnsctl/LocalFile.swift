import Glibc
import HTTPDNSSystem

/// Reading and writing the cookies.txt files of `cookie import` / `cookie export`; `-` is stdin.
enum LocalFile {
    struct Failure: Error, CustomStringConvertible {
        let path: String
        let error: SystemError
        var description: String { "\(path): \(error.errno)" }
    }

    static func read(_ path: String) throws(Failure) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    static func readBytes(_ path: String) throws(Failure) -> [UInt8] {
        let fd: FileDescriptor
        if path == "-" {
            fd = FileDescriptor(rawValue: 0)
        } else {
            do {
                fd = FileDescriptor(rawValue: try syscall("open") { open(path, O_RDONLY | O_CLOEXEC) })
            } catch { throw Failure(path: path, error: error) }
        }
        defer { if path != "-" { fd.close() } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try fd.read(into: raw) }
            }
            switch result {
            case .success(.done(0)): return bytes
            case .success(.done(let count)): bytes.append(contentsOf: chunk[..<count])
            case .success(.wouldBlock): _ = try? fd.wait(for: .readable, timeoutMilliseconds: -1)
            case .failure(let error): throw Failure(path: path, error: error)
            }
        }
    }

    /// The file's text, nil when it cannot be read.
    static func readText(_ path: String) -> String? { try? read(path) }

    /// Replaces `path` with `text`, mode 0600: a cookie file holds login sessions.
    static func write(_ text: String, to path: String) throws(Failure) {
        do {
            let fd = FileDescriptor(
                rawValue: try syscall("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) })
            try fd.closeAfter { () throws(SystemError) in try fd.writeAll(Array(text.utf8)) }
        } catch { throw Failure(path: path, error: error) }
    }
}
