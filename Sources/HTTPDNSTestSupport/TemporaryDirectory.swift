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

    /// Lets every uid into the directory (mkdtemp makes it 0700) and gives it a copy of each
    /// of `sources`, readable by all; returns the copies' paths. A test that runs a program as
    /// another uid hands it what it needs from here: the checkout may be private to its owner.
    public func shareWithAllUsers(_ sources: [String] = []) throws -> [String] {
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return try sources.map { source in
            let copy = file((source as NSString).lastPathComponent)
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: source, toPath: copy)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy)
            return copy
        }
    }

    /// Removes the directory and its contents now (it is removed at the latest on release).
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    deinit { remove() }
}
