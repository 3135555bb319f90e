/// What one unit of `ServerLimits.workPerTurn` is worth, and what each kind of work costs in
/// units: estimates of loop-thread time in multiples of one small request (about 12,000
/// instructions).
public enum WorkCost {
    /// Accepting a connection: reading its credentials, registering it, and later its close.
    public static let admission = 2
    /// A line: parsing it costs with its length.
    @inlinable public static func line(bytes: Int) -> Int { 1 + bytes / 1024 }
    /// A read: copying and scanning for line ends (blank lines included, which no line charges).
    @inlinable public static func read(bytes: Int) -> Int { 1 + bytes / 8192 }
    /// A piece of a streamed answer: escaping and copying about 8 KiB costs a request.
    @inlinable public static func written(bytes: Int) -> Int { 1 + bytes / 8192 }
    /// An answer written whole, beyond the request it answers: building and escaping a large
    /// one (a header of 180 cookies of 4 KiB: 720 KB, about a millisecond) costs a request per
    /// 2 KiB.
    @inlinable public static func answer(bytes: Int) -> Int { bytes / 2048 }
    /// Cookies stored by one `handleSetCookie`, beyond its first: each is parsed, stored,
    /// recorded for the commit and answered for (about two small requests).
    @inlinable public static func cookiesStored(_ count: Int) -> Int { 2 * max(count - 1, 0) }
}

/// A share of work per loop turn; a costly step may overdraw it, and the debt is paid off in
/// the turns after (each turn adds a share, up to one).
public struct WorkCredit: Sendable, Equatable {
    @usableFromInline var balance = 0
    @usableFromInline var turn: UInt64 = 0

    public init() {}

    /// Whether there is credit left in `turn`.
    @inlinable
    public mutating func isAvailable(turn: UInt64, perTurn: Int) -> Bool {
        refill(turn: turn, perTurn: perTurn)
        return balance > 0
    }

    @inlinable
    public mutating func charge(_ units: Int, turn: UInt64, perTurn: Int) {
        refill(turn: turn, perTurn: perTurn)
        balance -= units
    }

    @inlinable
    mutating func refill(turn: UInt64, perTurn: Int) {
        guard turn != self.turn else { return }
        let elapsed = Int(clamping: min(turn &- self.turn, 1 << 20))
        balance = min(perTurn, balance + perTurn * elapsed)
        self.turn = turn
    }
}
