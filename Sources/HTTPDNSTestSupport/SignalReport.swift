import CHTTPDNSTestSignals

/// A signal that ends a test process (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2) first writes to
/// stderr which it was and which process sent it: SwiftPM reports nothing when a test process
/// dies of one, and a whole run's test step then ends without a word. Every harness entry point
/// that touches `BrokenPipes.ignored` installs this too.
public enum SignalReport {
    static let installed: Void = chttpdns_report_terminating_signals()

    /// The line written for `signal` from `sender` running `commandLine` (/proc/PID/cmdline's
    /// NUL-separated form).
    public static func line(signal: Int32, sender: Int32, commandLine: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        let length = commandLine.withUnsafeBufferPointer { command in
            command.withMemoryRebound(to: CChar.self) { command in
                chttpdns_format_signal_report(&buffer, buffer.count, signal, sender, command.baseAddress, command.count)
            }
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
