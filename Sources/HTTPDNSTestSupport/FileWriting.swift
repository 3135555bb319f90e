import Glibc

/// Writes `text` to `path` (created or truncated) and sets `mode` exactly, whatever the umask:
/// for tests of files whose permissions matter (keys, passwords).
public func writeFile(_ text: String, to path: String, mode: mode_t) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    precondition(fd >= 0, "cannot create \(path)")
    _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
    chmod(path, mode)
}
