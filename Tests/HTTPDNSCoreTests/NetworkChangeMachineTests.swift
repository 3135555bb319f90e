import HTTPDNSCore
import Testing

/// Which kernel events are a network change, and how a burst becomes one change, on explicit
/// instants (the machine reads no clock).
struct NetworkChangeMachineTests {
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    static func v4(_ last: UInt8, interface: UInt32 = 2, prefix: UInt8 = 24) -> NetworkAddress {
        NetworkAddress(interface: interface, family: .ipv4, bytes: [192, 0, 2, last], prefixLength: prefix)
    }

    static func route(
        table: UInt32 = 254, protocol routingProtocol: UInt8 = 4, type: UInt8 = 1, cloned: Bool = false
    ) -> NetworkRoute {
        NetworkRoute(
            family: .ipv4, destinationPrefix: 0, table: table, routingProtocol: routingProtocol, type: type,
            cloned: cloned)
    }

    static func at(_ milliseconds: Int) -> MonotonicInstant { t0.advanced(byMilliseconds: milliseconds) }

    @Test func aBurstIsOneChangeOnceItIsQuiet() throws {
        var machine = NetworkChangeMachine()
        #expect(
            machine.received(.address(Self.v4(7), added: true, listed: false), now: Self.at(0))
                == .armTimer(at: Self.at(1_000)))
        // Each event of the burst moves its end.
        #expect(machine.received(.route(Self.route(), added: true), now: Self.at(300)) == .armTimer(at: Self.at(1_300)))
        #expect(machine.timerFired(now: Self.at(1_000)) == .armTimer(at: Self.at(1_300)))
        guard case .changed(let change)? = machine.timerFired(now: Self.at(1_300)) else {
            Issue.record("no change at the end of the burst")
            return
        }
        #expect(change.addressesAdded == 1 && change.routesAdded == 1 && change.at == Self.at(1_300))
        #expect(change.description == "1 address added (+192.0.2.7/24), 1 route added")
        #expect(machine.changes == 1 && machine.lastChange == Self.at(1_300))
        #expect(machine.timerFired(now: Self.at(5_000)) == nil)
    }

    @Test func whatWasThereAtStartAndRenewalsAreNoChange() {
        var machine = NetworkChangeMachine()
        #expect(machine.received(.address(Self.v4(1), added: true, listed: true), now: Self.at(0)) == nil)
        // A lease or router advertisement renewing an address the machine has.
        #expect(machine.received(.address(Self.v4(1), added: true, listed: false), now: Self.at(10)) == nil)
        #expect(machine.timerFired(now: Self.at(5_000)) == nil)
        // The same address on another interface, or with another prefix, is another address.
        #expect(
            machine.received(.address(Self.v4(1, interface: 3), added: true, listed: false), now: Self.at(20)) != nil)
        // An address that goes is a change, and when it comes back it is new again.
        var other = NetworkChangeMachine()
        _ = other.received(.address(Self.v4(1), added: true, listed: true), now: Self.at(0))
        #expect(other.received(.address(Self.v4(1), added: false, listed: false), now: Self.at(0)) != nil)
        guard case .changed(let change)? = other.timerFired(now: Self.at(1_000)) else {
            Issue.record("a removed address made no change")
            return
        }
        #expect(change.addressesRemoved == 1 && change.description == "1 address removed (-192.0.2.1/24)")
        #expect(other.received(.address(Self.v4(1), added: true, listed: false), now: Self.at(7_000)) != nil)
    }

    @Test func routesAndAddressesThatLeadNowhereAreNoChange() {
        var machine = NetworkChangeMachine()
        let linkLocal = NetworkAddress(
            interface: 9, family: .ipv6, bytes: [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1],
            prefixLength: 64)
        #expect(machine.received(.address(linkLocal, added: true, listed: false), now: Self.at(0)) == nil)
        #expect(machine.received(.address(linkLocal, added: false, listed: false), now: Self.at(0)) == nil)
        // The kernel's own routes for an address or a link, the local table, cached routes, and
        // routes that are not unicast.
        for route in [
            Self.route(protocol: 2), Self.route(table: 255, protocol: 4), Self.route(cloned: true),
            Self.route(type: 2),
        ] {
            #expect(machine.received(.route(route, added: true), now: Self.at(0)) == nil, "\(route)")
        }
        #expect(machine.timerFired(now: Self.at(5_000)) == nil)
        // A VPN's default route in its own table is one.
        #expect(machine.received(.route(Self.route(table: 51_820), added: true), now: Self.at(0)) != nil)
    }

    @Test func lostNotificationsAreAChange() {
        var machine = NetworkChangeMachine()
        #expect(machine.received(.lost, now: Self.at(0)) == .armTimer(at: Self.at(1_000)))
        guard case .changed(let change)? = machine.timerFired(now: Self.at(1_000)) else {
            Issue.record("lost notifications made no change")
            return
        }
        #expect(change.lostEvents && change.description == "some events lost")
    }

    @Test func aSteadyStreamStillMakesAChangeAndChangesAreSpaced() {
        var machine = NetworkChangeMachine()
        var last: NetworkChangeMachine.Action?
        // A route every 500 ms for 12 s: the burst ends 10 s after its first event.
        for step in 0..<24 {
            last = machine.received(.route(Self.route(), added: step % 2 == 0), now: Self.at(step * 500))
            if step == 19 { #expect(last == .armTimer(at: Self.at(10_000))) }
            if step * 500 >= 10_000, case .changed? = machine.timerFired(now: Self.at(step * 500)) {
                #expect(step == 20, "the change came at \(step * 500) ms")
            }
        }
        #expect(machine.changes == 1)
        // The next burst ends no sooner than 5 s after that change.
        #expect(machine.received(.lost, now: Self.at(12_000)) == .armTimer(at: Self.at(15_000)))
        #expect(machine.timerFired(now: Self.at(13_000)) == .armTimer(at: Self.at(15_000)))
        #expect(machine.timerFired(now: Self.at(15_000)) != nil)
        #expect(machine.changes == 2 && last != nil)
    }
}
