import Foundation

/// Where the package's built executables are: beside the test bundle that is running.
public enum BuiltProducts {
    public static var directory: String {
        if let override = ProcessInfo.processInfo.environment["HTTPDNS_BUILD_DIR"] { return override }
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // The XCTest runner lives inside the .xctest bundle on some layouts.
        while dir.hasSuffix(".xctest") || dir.hasSuffix("/Contents/MacOS") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }

    /// The built product called `name` (`httpdnsd`, `httpdnsctl`, ...).
    public static func path(_ name: String) -> String { directory + "/" + name }

    /// The package root (for rpc-schema, packaging and the test data under Tests), found from
    /// this source file.
    public static var packageRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }
}
