import Glibc

/// Why a file holding a secret (a key, a password) was refused. The message names the file and
/// the problem, never any of its contents.
public struct SecretFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the file.
    public enum Reason: Sendable, Equatable {
        /// It cannot be opened or read.
        case unreadable(SystemError)
        /// It is a directory, a device, a socket or a FIFO.
        case notRegularFile
        /// Users other than its owner and group may read or write it (the permission bits).
        case accessibleByOthers(mode: UInt32)
        /// It is larger than any secret of this kind.
        case tooLarge(limit: Int)
    }

    public let path: String
    public let reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .unreadable(let error): return "\(path): \(error.errno)"
        case .notRegularFile: return "\(path): not a regular file"
        case .accessibleByOthers(let mode):
            let octal = String(mode & 0o777, radix: 8)
            return "\(path): other users may access it (mode \(octal)); chmod o-rwx, for example 0600 or 0640"
        case .tooLarge(let limit): return "\(path): larger than \(limit) bytes"
        }
    }
}

extension Files {
    /// Reads a file that holds a secret: it must be a regular file that users outside its owner
    /// and group cannot read or write (what `install -m 0640` or `chmod 600` make). The checks
    /// run on the opened descriptor, so a file swapped after the check is never read. The caller
    /// owns the bytes and should wipe them when done.
    public static func readSecret(_ path: String, limit: Int = 64 * 1024) throws(SecretFileError) -> [UInt8] {
        let raw = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard raw >= 0 else {
            throw SecretFileError(path: path, reason: .unreadable(SystemError(errno: .current, call: "open")))
        }
        let fd = FileDescriptor(rawValue: raw)
        defer { fd.close() }
        var status = stat()
        guard fstat(raw, &status) == 0 else {
            throw SecretFileError(path: path, reason: .unreadable(SystemError(errno: .current, call: "fstat")))
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw SecretFileError(path: path, reason: .notRegularFile) }
        guard status.st_mode & 0o007 == 0 else {
            throw SecretFileError(path: path, reason: .accessibleByOthers(mode: UInt32(status.st_mode)))
        }
        var contents = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < contents.count {
            let n = contents.withUnsafeMutableBytes { buffer in
                Glibc.read(raw, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if n == 0 { break }
            if n < 0 {
                if Errno.current == .interrupted { continue }
                throw SecretFileError(path: path, reason: .unreadable(SystemError(errno: .current, call: "read")))
            }
            filled += n
        }
        guard filled <= limit else { throw SecretFileError(path: path, reason: .tooLarge(limit: limit)) }
        let secret = Array(contents[0..<filled])
        // The scratch buffer held the secret too.
        contents.withUnsafeMutableBytes { buffer in
            for index in buffer.indices { buffer[index] = 0 }
        }
        return secret
    }
}
