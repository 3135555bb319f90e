import HTTPDNSSystem

/// Work too long for one turn (a large `importCookies`), run a slice per turn between the
/// connections' turns, each slice charged to the uid that asked for it: the uid's work credit
/// bounds how much of every turn its slices take, and a uid without credit waits for the next.
final class SlicedWork {
    /// What a slice did: more to come, or done; and what it cost, in work units.
    enum Outcome: Equatable {
        case more(units: Int)
        case done(units: Int)
    }

    private struct Job {
        var uid: UInt32
        var slice: () -> Outcome
    }

    private unowned let loop: EventLoop
    private let perTurn: Int
    private var jobs: [Job] = []
    private var scheduled = false
    /// The account a uid's slices are charged to (set by the server).
    var account: (UInt32) -> UserLoad = { UserLoad(uid: $0) }
    /// The current turn (set by the server).
    var turn: () -> UInt64 = { 0 }

    init(loop: EventLoop, perTurn: Int) {
        self.loop = loop
        self.perTurn = perTurn
    }

    /// Runs `slice` once per turn, from the next one, until it says it is done; its work is
    /// charged to the account `uid` (`CallContext.account`).
    func run(for uid: UInt32, _ slice: @escaping () -> Outcome) {
        jobs.append(Job(uid: uid, slice: slice))
        schedule()
    }

    /// Slices still to run.
    var pendingCount: Int { jobs.count }

    private func runTurn() {
        let current = jobs
        jobs.removeAll()
        let turn = turn()
        for job in current {
            let user = account(job.uid)
            guard user.credit.isAvailable(turn: turn, perTurn: perTurn) else {
                jobs.append(job)
                continue
            }
            switch job.slice() {
            case .more(let units):
                user.credit.charge(units, turn: turn, perTurn: perTurn)
                jobs.append(job)
            case .done(let units):
                user.credit.charge(units, turn: turn, perTurn: perTurn)
            }
        }
        if !jobs.isEmpty { schedule() }
    }

    private func schedule() {
        guard !scheduled else { return }
        scheduled = true
        loop.runNextTurn { [unowned self] in
            self.scheduled = false
            self.runTurn()
        }
    }
}

@available(*, unavailable)
extension SlicedWork: Sendable {}
