import Foundation
import HTTPDNSSystem

/// A private scratch directory (`/tmp/PREFIX-XXXXXX`, mkdtemp(3)) removed with everything in it
/// when the value goes away: the one temporary-directory helper of every suite. Paths stay short,
/// as a socket inside must fit `sun_path` (107 bytes).
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "hd") {
        do {
            path = try Files.makeTemporaryDirectory(prefix: prefix)
        } catch {
            preconditionFailure("cannot make a temporary directory: \(error)")
        }
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Removes the directory and its contents now (it is removed at the latest on release).
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}
