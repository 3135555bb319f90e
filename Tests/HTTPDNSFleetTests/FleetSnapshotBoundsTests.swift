import HTTPDNSFleet
import HTTPDNSRedis
import HTTPDNSTestSupport
import Testing

/// A Redis that answers the snapshot's scan script with counts or cursors the fleet never writes
/// is a peer like any other: the read fails, bounded, and the daemon neither traps nor grows.
struct FleetSnapshotBoundsTests {
    typealias F = FleetFixtures

    static func fleet(_ redis: ScriptedRedis) -> FleetRedis {
        FleetRedis(
            connection: RedisConnection(
                options: RedisOptions(
                    endpoint: .unix(path: redis.socketPath), connectTimeoutMilliseconds: 1_000,
                    commandTimeoutMilliseconds: 2_000)),
            key: F.key(), fleetName: "gateways")
    }

    static func scanFails(_ redis: ScriptedRedis) -> Bool {
        do {
            _ = try fleet(redis).sweepSnapshot(horizonMs: 0)
            return false
        } catch {
            return error.code == .unexpectedReply
        }
    }

    /// A negative count of skipped entries trapped the replication thread (a range from 0 to -1);
    /// four billion of them grew the daemon by a gigabyte every two seconds.
    @Test(arguments: ["-1", "4000000000"])
    func anImpossibleSkippedCountFailsTheRead(_ skipped: String) throws {
        let directory = TemporaryDirectory(prefix: "fsnap")
        let redis = try ScriptedRedis(in: directory) { _ in "*3\r\n$1\r\n0\r\n*0\r\n:\(skipped)\r\n" }
        defer { redis.stop() }
        #expect(Self.scanFails(redis))
    }

    /// A cursor that never comes back to 0 ended only when memory did (400 MB in 40 s); now the
    /// read stops at `maxSnapshotEntries`.
    @Test func aScanThatNeverEndsStopsAtTheBound() throws {
        let directory = TemporaryDirectory(prefix: "fsnap")
        let pairs = 200
        let step =
            "*3\r\n$1\r\n1\r\n*\(pairs * 2)\r\n" + String(repeating: "$1\r\nf\r\n$1\r\nv\r\n", count: pairs) + ":0\r\n"
        let redis = try ScriptedRedis(in: directory) { _ in step }
        defer { redis.stop() }
        #expect(Self.scanFails(redis))
        #expect(redis.evaluationCount <= FleetRedis.maxSnapshotEntries / pairs + 1)
    }
}
