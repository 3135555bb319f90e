import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The rtnetlink reader against messages built by hand from the kernel's headers.
struct RouteNetlinkParserTests {
    static let address = NetworkAddress(
        interface: 3, family: .ipv6, bytes: [0xfd] + [UInt8](repeating: 0, count: 14) + [5], prefixLength: 64)
    static let route = NetworkRoute(
        family: .ipv4, destinationPrefix: 16, table: 51_820, routingProtocol: 3, type: 1, cloned: false)

    @Test func readsAddressesRoutesAndOverruns() {
        let datagram =
            RouteNetlinkMessages.address(Self.address, added: true, listed: true)
            + RouteNetlinkMessages.route(Self.route, added: false) + RouteNetlinkMessages.overrun
            + RouteNetlinkMessages.message(type: 3, flags: 2, body: [0, 0, 0, 0])  // NLMSG_DONE
        #expect(
            RouteNetlinkParser.events(in: datagram[...]) == [
                .address(Self.address, added: true, listed: true), .route(Self.route, added: false), .lost,
            ])
    }

    /// IFA_LOCAL is the machine's own end of a point-to-point link; IFA_ADDRESS its peer.
    @Test func aPointToPointAddressIsTheLocalOne() {
        let local = NetworkAddress(interface: 5, family: .ipv4, bytes: [10, 0, 0, 1], prefixLength: 32)
        let message = RouteNetlinkMessages.address(local, added: true, peer: [10, 0, 0, 2])
        #expect(RouteNetlinkParser.events(in: message[...]) == [.address(local, added: true, listed: false)])
    }

    @Test func whatDoesNotFitIsSkippedOrEndsTheRead() {
        let whole = RouteNetlinkMessages.address(Self.address, added: false)
        // Cut anywhere: never an event, never a read past the end.
        for length in 0..<whole.count {
            #expect(RouteNetlinkParser.events(in: whole[0..<length]).isEmpty, "cut at \(length)")
        }
        // An attribute of the wrong size, an unknown family: skipped, the next message still read.
        var wrongSize = RouteNetlinkMessages.message(
            type: 20, body: [2, 32, 0, 0, 1, 0, 0, 0] + RouteNetlinkMessages.attribute(2, [10, 9, 9]))
        wrongSize += RouteNetlinkMessages.message(type: 20, body: [7, 32, 0, 0, 1, 0, 0, 0])
        wrongSize += whole
        #expect(RouteNetlinkParser.events(in: wrongSize[...]) == [.address(Self.address, added: false, listed: false)])
        // A header claiming more than is there ends the read.
        var lying = whole
        lying[0] = 0xff
        #expect(RouteNetlinkParser.events(in: lying[...]).isEmpty)
    }

    @Test func theDumpRequestAsksForEveryAddress() {
        let request = RouteNetlinkParser.addressDumpRequest(sequence: 7)
        #expect(request.count == 24)
        #expect(request[0..<4] == [24, 0, 0, 0][...] && request[4] == 22 && request[6] == 0x01 && request[7] == 0x03)
        #expect(request[8] == 7 && request[16] == 0)
    }
}
