/// Which user owns each subordinate uid, from `/etc/subuid` (subuid(5)), so that every per-uid
/// bound is charged to the person behind a uid: Debian gives each user 65536 subordinate uids for
/// rootless containers, and their processes reach the daemon with those uids as `SO_PEERCRED`.
///
/// A line is `OWNER:FIRST:COUNT`, the owner a user name or a uid (as newuidmap reads it); blank
/// lines, `#` comments and malformed lines are skipped. Jars stay per uid: only the bounds (work,
/// connections, memory, upstream queries, monitors) are the owner's.
public struct SubordinateIDs: Sendable, Equatable {
    /// Ranges sorted by their first uid.
    private var ranges: [Range] = []
    /// For each index, the highest last uid of the ranges up to it.
    private var reach: [UInt32] = []

    struct Range: Sendable, Equatable {
        var first: UInt32
        var count: UInt32
        var owner: UInt32
    }

    public init() {}

    /// Parses the file's text; `uidOfName` resolves an owner given by name (nil: unknown, skipped).
    public init(parsing text: String, uidOfName: (String) -> UInt32?) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard !trimmed.isEmpty, trimmed.first != "#" else { continue }
            let fields = trimmed.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, let first = UInt32(fields[1]), let count = UInt32(fields[2]), count > 0,
                first <= UInt32.max - (count - 1)
            else { continue }
            let name = String(fields[0])
            guard let owner = UInt32(name) ?? uidOfName(name) else { continue }
            ranges.append(Range(first: first, count: count, owner: owner))
        }
        ranges.sort { $0.first < $1.first }
        var highest: UInt32 = 0
        reach = ranges.map { range in
            highest = max(highest, range.first + (range.count - 1))
            return highest
        }
    }

    /// The uid charged for `uid`: its owner when it is a subordinate uid of another user, else
    /// itself. Where ranges overlap (an administrator's mistake) the one that starts first wins.
    public func account(of uid: UInt32) -> UInt32 {
        // The last range that starts at or before `uid`, then back while some range up to there
        // still reaches it (`reach`: the furthest last uid of the ranges up to each index).
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].first <= uid { low = middle + 1 } else { high = middle }
        }
        var found: UInt32?
        var index = low - 1
        while index >= 0 && reach[index] >= uid {
            let range = ranges[index]
            if uid - range.first <= range.count - 1 { found = range.owner }
            index -= 1
        }
        return found ?? uid
    }

    public var isEmpty: Bool { ranges.isEmpty }
}
