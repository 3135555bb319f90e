import HTTPDNSTestSupport
import Testing

/// The line a test process writes before a terminating signal ends it (`SignalReport`).
struct SignalReportTests {
    @Test func namesTheSignalTheSenderAndItsCommandLine() {
        let line = SignalReport.line(signal: 15, sender: 4321, commandLine: Array("redis-server\0--port\u{0}0\0".utf8))
        #expect(line == "test process: signal 15 from pid 4321 (redis-server --port 0)\n")
    }

    @Test func aSenderWithoutACommandLineStillHasItsPid() {
        #expect(SignalReport.line(signal: 2, sender: 0, commandLine: []) == "test process: signal 2 from pid 0 ()\n")
    }

    @Test func aLongCommandLineIsCutToTheBuffer() {
        let line = SignalReport.line(
            signal: 9, sender: 7, commandLine: Array(repeating: UInt8(ascii: "x"), count: 2000))
        #expect(line.utf8.count == 511)
        #expect(line.hasPrefix("test process: signal 9 from pid 7 (xxx"))
    }
}
