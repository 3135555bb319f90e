import HTTPDNSCore
import Testing

/// The bounds and the order of upstream work: caps per uid and in total, a worker share per
/// owner, turns in round-robin.
struct UpstreamFlightQueueTests {
    static let hostile = FlightOwner.user(65_534)
    static let root = FlightOwner.user(0)

    /// Starts everything the free workers may take, in order.
    static func drain(_ queue: inout FlightQueue<Int>) -> [Int] {
        var started: [Int] = []
        while let id = queue.next() { started.append(id) }
        return started
    }

    @Test func eachUserIsCappedAndSoIsTheTotal() {
        var queue = FlightQueue<Int>(limits: FlightLimits(maxTotal: 5, maxPerUser: 3, workers: 16, workersPerOwner: 4))
        for id in 0..<3 { #expect(queue.admit(id, owner: Self.hostile) == nil) }
        #expect(queue.admit(3, owner: Self.hostile) == .perUser(limit: 3))
        #expect(queue.admit(4, owner: Self.root) == nil)
        #expect(queue.admit(5, owner: .user(1000)) == nil)
        // Past the total, a uid still has its reserve (one flight here), and no more.
        #expect(queue.admit(6, owner: .user(1001)) == nil)
        #expect(queue.admit(10, owner: .user(1001)) == .total(limit: 5))
        #expect(queue.admit(11, owner: .user(1000)) == .total(limit: 5))
        // The daemon's own flights (prefetch) are bounded by the configuration, not refused.
        #expect(queue.admit(7, owner: .daemon) == nil)
        #expect(queue.count == 7 && queue.count(uid: 65_534) == 3)
        // A flight ending frees its place under its starter's cap.
        #expect(Self.drain(&queue).count == 7)
        queue.finish(0)
        queue.finish(6)
        #expect(queue.admit(8, owner: Self.hostile) == nil)
        #expect(queue.admit(9, owner: Self.hostile) == .perUser(limit: 3))
    }

    /// A uid whose flights all hang holds at most its share of the workers; another user's flight,
    /// queued after all of them, starts at once.
    @Test func oneUsersSlowFlightsLeaveWorkersForOthers() {
        var queue = FlightQueue<Int>(
            limits: FlightLimits(maxTotal: 100, maxPerUser: 64, workers: 16, workersPerOwner: 4))
        for id in 0..<64 { #expect(queue.admit(id, owner: Self.hostile) == nil) }
        #expect(Self.drain(&queue) == [0, 1, 2, 3])
        #expect(queue.running == 4)
        #expect(queue.admit(100, owner: Self.root) == nil)
        #expect(Self.drain(&queue) == [100])
        // Only when one of its own ends does the hostile uid get another worker.
        queue.finish(2)
        #expect(Self.drain(&queue) == [4])
    }

    /// Owners take turns: a long queue of one does not delay the first flight of another.
    @Test func ownersTakeTurns() {
        var queue = FlightQueue<Int>(
            limits: FlightLimits(maxTotal: 100, maxPerUser: 64, workers: 2, workersPerOwner: 2))
        for id in 0..<5 { _ = queue.admit(id, owner: Self.hostile) }
        _ = queue.admit(10, owner: Self.root)
        _ = queue.admit(11, owner: Self.root)
        #expect(Self.drain(&queue) == [0, 10])
        queue.finish(0)
        #expect(Self.drain(&queue) == [1])
        queue.finish(10)
        #expect(Self.drain(&queue) == [11])
        queue.finish(1)
        queue.finish(11)
        #expect(Self.drain(&queue) == [2, 3])
    }

    /// Another owner waiting for the same answer queues the flight under its own turn too, without
    /// counting it against its cap: nobody waits behind the queue of whoever asked first.
    @Test func aSponsoredFlightStartsAtTheEarlierTurn() {
        var queue = FlightQueue<Int>(
            limits: FlightLimits(maxTotal: 100, maxPerUser: 64, workers: 16, workersPerOwner: 1))
        for id in 0..<10 { _ = queue.admit(id, owner: Self.hostile) }
        #expect(Self.drain(&queue) == [0])
        queue.sponsor(9, by: Self.root)
        #expect(queue.count(uid: 0) == 0)
        #expect(Self.drain(&queue) == [9])
        #expect(!queue.isQueued(9))
        queue.finish(9)
        #expect(queue.count(uid: 65_534) == 9)
        // Sponsoring a running flight changes nothing.
        queue.sponsor(0, by: Self.root)
        #expect(Self.drain(&queue).isEmpty)
    }

    @Test func aCancelledFlightNeverStartsAndFreesItsPlace() {
        var queue = FlightQueue<Int>(limits: FlightLimits(maxTotal: 100, maxPerUser: 2, workers: 1, workersPerOwner: 1))
        _ = queue.admit(0, owner: Self.root)
        _ = queue.admit(1, owner: Self.root)
        #expect(queue.admit(2, owner: Self.root) == .perUser(limit: 2))
        #expect(Self.drain(&queue) == [0])
        queue.cancel(1)
        queue.cancel(0)  // running: only `finish` ends it
        #expect(queue.count == 1)
        #expect(queue.admit(2, owner: Self.root) == nil)
        queue.finish(0)
        #expect(Self.drain(&queue) == [2])
        queue.finish(2)
        #expect(queue.count == 0 && queue.running == 0)
    }

    /// Sixteen uids each holding 64 flights fill the total: a seventeenth still starts its
    /// reserve of 8, so another user's cache misses are never all refused (9 of 10 were).
    @Test func manyUidsAtTheirCapLeaveAnotherItsReserve() {
        var queue = FlightQueue<Int>(limits: FlightLimits())
        var id = 0
        for uid in 0..<16 {
            for _ in 0..<64 {
                #expect(queue.admit(id, owner: .user(3_000 + UInt32(uid))) == nil)
                id += 1
            }
        }
        let admitted = (0..<10).filter { queue.admit(100_000 + $0, owner: .user(2_000)) == nil }
        #expect(admitted.count == 8)
        #expect(queue.admit(200_000, owner: .user(2_000)) == .total(limit: 1_024), "no more than the reserve")
    }

    /// Four uids whose names hang hold every regular worker (4 each); a fifth owner's flight
    /// starts on a reserve worker at once, and each owner with nothing running gets one, while
    /// the colluders get none of the reserve.
    @Test func reserveWorkersGoToOwnersWithNothingRunning() {
        var queue = FlightQueue<Int>(limits: FlightLimits())
        var id = 0
        for uid in 0..<4 {
            for _ in 0..<8 {
                #expect(queue.admit(id, owner: .user(3_000 + UInt32(uid))) == nil)
                id += 1
            }
        }
        #expect(Self.drain(&queue).count == 16)
        #expect(queue.running == 16)
        #expect(queue.admit(1_000, owner: .user(2_000)) == nil)
        #expect(queue.admit(1_001, owner: .user(2_000)) == nil)
        #expect(queue.admit(1_002, owner: .user(2_001)) == nil)
        #expect(Self.drain(&queue) == [1_000, 1_002], "one reserve worker per owner with none running")
        queue.finish(1_000)
        #expect(Self.drain(&queue) == [1_001])
        #expect(queue.running == 18)
    }
}
