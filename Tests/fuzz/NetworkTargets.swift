// The rtnetlink reader: the kernel is trusted, but a reader whose lengths are not checked turns any
// layout it did not expect (a new attribute, a cut datagram) into a crash of the daemon.

@testable import HTTPDNSCore

let networkTargets = [
    FuzzTarget(name: "netlink", summary: "rtnetlink address and route messages: bounds, round trip, changes") {
        checkNetlink($0)
    }
]

private func checkNetlink(_ bytes: UnsafeBufferPointer<UInt8>) {
    let events = RouteNetlinkParser.events(in: ArraySlice(bytes))
    for event in events {
        if case .address(let address, _, _) = event {
            require(address.bytes.count == (address.family == .ipv4 ? 4 : 16), "\(address) has the wrong length")
        }
    }
    require(
        RouteNetlinkParser.events(in: ArraySlice(RouteNetlinkMessages.datagram(events))) == events,
        "events changed in an encode-then-parse round trip")
    // Whatever the events, a burst the machine started ends in exactly one change.
    var machine = NetworkChangeMachine()
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)
    var armed = false
    for event in events {
        if case .armTimer(let at)? = machine.received(event, now: start) {
            require(start < at, "a timer armed for now or earlier")
            armed = true
        }
    }
    let late = start.advanced(bySeconds: 60)
    let fired = machine.timerFired(now: late)
    if case .changed? = fired {
        require(armed, "a change without a burst")
    } else {
        require(!armed, "a burst that never ended")
    }
    require(machine.timerFired(now: late) == nil, "one burst reported twice")
}
