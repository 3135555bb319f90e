import HTTPDNSSystem

/// A test writes to daemons, servers and children that may already have closed their end: that
/// must be an EPIPE the test sees, never a SIGPIPE that ends the whole test run. Every harness
/// entry point touches `ignored` first (Swift Testing installs no handler of its own).
enum BrokenPipes {
    static let ignored: Void = {
        SignalSource.ignoreSIGPIPE()
        _ = SignalReport.installed
    }()
}
