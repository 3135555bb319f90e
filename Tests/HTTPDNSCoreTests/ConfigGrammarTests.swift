import HTTPDNSCore
import Testing

/// Tables from systemd.time(7) and systemd's size and boolean parsers.
struct ConfigGrammarTests {
    @Test(arguments: [
        ("2s", 2_000),
        ("500ms", 500),
        ("1min", 60_000),
        ("1h 30min", 5_400_000),
        ("1h30min", 5_400_000),
        ("1d", 86_400_000),
        ("30", 30_000),
        ("0", 0),
        ("1.5h", 5_400_000),
        ("2 min", 120_000),
        ("  5s  ", 5_000),
        ("1m", 60_000),
        ("1M", 2_629_800_000),
        ("1w", 604_800_000),
        ("1y", 31_557_600_000),
        ("2 hours", 7_200_000),
        ("3 seconds", 3_000),
        ("1sec", 1_000),
        ("1hr", 3_600_000),
        ("10msec", 10),
        ("1us", 1),
        ("1500usec", 2),
        ("1000us", 1),
        ("1\u{B5}s", 1),
        ("1d 2h 3min 4s 5ms", 93_784_005),
        ("30 5", 35_000),
        (".5s", 500),
    ])
    func validTimeSpans(text: String, milliseconds: Int) {
        #expect(ConfigTimeSpan.milliseconds(text) == milliseconds)
    }

    @Test(arguments: [
        "", " ", "2 parsecs", "-1s", "1.2.3s", "s", "1S", "1 h x", "1x", "ms", "99999999999999999999s", "infinity",
        "1,5s", "1e3",
    ])
    func invalidTimeSpans(text: String) {
        #expect(ConfigTimeSpan.milliseconds(text) == nil)
    }

    @Test(arguments: [
        ("1048576", 1_048_576),
        ("1M", 1_048_576),
        ("1MiB", 1_048_576),
        ("512K", 524_288),
        ("512KiB", 524_288),
        ("1.5K", 1_536),
        ("10B", 10),
        ("1 M", 1_048_576),
        ("2G", 2_147_483_648),
        ("1T", 1_099_511_627_776),
        ("0", 0),
    ])
    func validSizes(text: String, bytes: Int) {
        #expect(ConfigByteSize.bytes(text) == bytes)
    }

    @Test(arguments: ["", "1KB", "1m", "1k", "-1", "M", "1 M M", "1MB", "1Mi", "1.2.3K", "99999999999T"])
    func invalidSizes(text: String) {
        #expect(ConfigByteSize.bytes(text) == nil)
    }

    @Test(arguments: [
        ("yes", true), ("no", false), ("true", true), ("false", false), ("on", true), ("off", false),
        ("1", true), ("0", false), ("YES", true), ("Off", false), ("y", true), ("n", false), ("t", true),
        ("f", false),
    ])
    func validBooleans(text: String, value: Bool) {
        #expect(ConfigBoolean.value(text) == value)
    }

    @Test(arguments: ["", "2", "yess", "enabled", "nope"])
    func invalidBooleans(text: String) {
        #expect(ConfigBoolean.value(text) == nil)
    }
}
