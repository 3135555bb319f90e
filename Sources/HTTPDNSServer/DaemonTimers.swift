import HTTPDNSSystem

/// Pets systemd's watchdog every half of its interval, as sd_watchdog_enabled(3) recommends, from
/// the loop thread: a loop that stops turning stops the pets, and systemd restarts the daemon.
final class WatchdogPets {
    private let loop: EventLoop
    private let intervalMilliseconds: Int64
    private let pet: () -> Void

    /// `watchdogMicroseconds`: WATCHDOG_USEC, the interval systemd asked for.
    init(loop: EventLoop, watchdogMicroseconds: UInt64, pet: @escaping () -> Void) {
        self.loop = loop
        intervalMilliseconds = max(Int64(watchdogMicroseconds / 2_000), 1)
        self.pet = pet
    }

    /// Pets now, then every half interval for as long as the loop runs.
    func start() {
        pet()
        loop.schedule(afterMilliseconds: intervalMilliseconds) { [weak self] in self?.start() }
    }
}

/// `IdleExit=` under socket activation: once the daemon has had no connection for the period and
/// nothing it started is still running, it stops (systemd starts it again on the next connection).
/// Work still running when the period ends (a commit, an upstream query) waits one more period.
final class IdleExit {
    private let loop: EventLoop
    private let connectionCount: () -> Int
    private let isQuiescent: () -> Bool
    private let stop: () -> Void
    private var timer: EventLoop.TimerID?
    /// 0: never (not socket activated, or `IdleExit=infinity`).
    var periodMilliseconds: Int64

    init(
        loop: EventLoop, periodMilliseconds: Int64, connectionCount: @escaping () -> Int,
        isQuiescent: @escaping () -> Bool, stop: @escaping () -> Void
    ) {
        self.loop = loop
        self.periodMilliseconds = periodMilliseconds
        self.connectionCount = connectionCount
        self.isQuiescent = isQuiescent
        self.stop = stop
    }

    var isArmed: Bool { timer != nil }

    /// Starts the period again from now.
    func arm() {
        cancel()
        guard periodMilliseconds > 0 else { return }
        timer = loop.schedule(afterMilliseconds: periodMilliseconds) { [weak self] in self?.periodEnded() }
    }

    func cancel() {
        guard let timer else { return }
        loop.cancel(timer)
        self.timer = nil
    }

    /// The period runs while no connection is open.
    func connectionCountChanged(_ count: Int) {
        if count == 0 { arm() } else { cancel() }
    }

    private func periodEnded() {
        timer = nil
        guard connectionCount() == 0 else { return }
        guard isQuiescent() else { return arm() }
        stop()
    }
}
