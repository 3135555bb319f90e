import Foundation

/// The sanitizer this build runs under, and the environment of its runtime that every program a test starts
/// must see too (`.ci/sanitize` sets it): the daemon's threads are where races live.
public enum SanitizerOptions {
    /// Where reports go and the suppressions, and the library `.ci/sanitize` preloads for ThreadSanitizer.
    public static let names = ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "LD_PRELOAD"]

    /// Those of `names` set in this process's environment.
    public static var current: [String: String] {
        ProcessInfo.processInfo.environment.filter { names.contains($0.key) }
    }

    /// `thread` or `address` when this process (so every product of its build) was built with that
    /// sanitizer: its runtime's entry point is linked into the executable.
    public static var active: String? {
        if dlsym(nil, "__tsan_init") != nil { return "thread" }
        if dlsym(nil, "__asan_init") != nil { return "address" }
        return nil
    }
}
