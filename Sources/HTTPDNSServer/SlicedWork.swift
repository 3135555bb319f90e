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
    private var jobs: [Job] = []
    private var scheduled = false
    /// Whether an account's share of this turn has work left (set by the server: `Admission`).
    var mayRun: (UInt32) -> Bool = { _ in true }
    /// Charges work to an account's share of the turn (set by the server).
    var charge: (UInt32, Int) -> Void = { _, _ in }

    init(loop: EventLoop) {
        self.loop = loop
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
        for job in current {
            guard mayRun(job.uid) else {
                jobs.append(job)
                continue
            }
            switch job.slice() {
            case .more(let units):
                charge(job.uid, units)
                jobs.append(job)
            case .done(let units):
                charge(job.uid, units)
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
