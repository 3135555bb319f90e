import Glibc
import HTTPDNSSystem

/// Checks `condition` every `milliseconds` until it holds or `seconds` have passed; true when it
/// held in time. For events a test cannot block on: a file appearing, a counter or status value
/// reaching what the test waits for, a process exiting. The pause between checks is the poll
/// interval, never the synchronization: the test goes on as soon as the condition holds.
public func eventually(_ seconds: Double = 30, every milliseconds: Int = 5, _ condition: () throws -> Bool) rethrows
    -> Bool
{
    let deadline = MonotonicClock.nowNanoseconds() + Int64(seconds * 1e9)
    while MonotonicClock.nowNanoseconds() < deadline {
        if try condition() { return true }
        usleep(UInt32(milliseconds * 1_000))
    }
    return try condition()
}
