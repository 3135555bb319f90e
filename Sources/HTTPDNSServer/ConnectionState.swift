import HTTPDNSCore

/// Where a connection is in its life, as events move it on (swift-nio's style: events in, actions
/// out). `Connection` does the I/O; this value only decides.
///
/// Two things vary independently until the end: whether the client is still there to read
/// answers (`serving` or `abandoned`), and what the read side does (`Input`). A connection closes
/// once nothing it read is left to run and, while serving, every answer is out.
struct ConnectionState: Equatable {
    /// Why a connection neither reads nor runs requests for now (`Admission` says which).
    typealias Wait = AdmissionWait

    /// The read side.
    enum Input: Equatable {
        /// Reads when the socket is readable and runs each complete line.
        case open
        /// Reads and runs nothing until the wait clears (complete lines may wait in the buffer).
        case waiting(Wait)
        /// No more bytes will be read (end of file, an oversized line, a refusal, shutdown);
        /// lines already read still run, once the wait clears when there is one.
        case ended(Wait?)
    }

    enum Phase: Equatable {
        /// The client is there: answers are sent.
        case serving(Input)
        /// The client is gone (hang-up, a failed send): what it sent still runs, for its
        /// notifications' sake, and answers are dropped.
        case abandoned(Input)
        case closed
    }

    private(set) var phase = Phase.serving(.open)

    /// What the end of a turn does with the connection.
    enum Settlement: Equatable {
        case close
        /// Run again next turn without waiting for epoll (an abandoned connection has no epoll
        /// registration; what it sent is read and run turn by turn).
        case continueNextTurn
        /// Wait for these epoll events.
        case watch(readable: Bool, writable: Bool)
    }

    // MARK: queries

    var isClosed: Bool { phase == .closed }
    var isServing: Bool {
        if case .serving = phase { return true }
        return false
    }

    var input: Input? {
        switch phase {
        case .serving(let input), .abandoned(let input): return input
        case .closed: return nil
        }
    }

    /// Reads are wanted when epoll says the socket is readable.
    var mayRead: Bool { input == .open }

    /// Complete lines may run now.
    var mayRun: Bool { input == .open || input == .ended(nil) }

    var wait: Wait? {
        switch input {
        case .waiting(let wait)?: return wait
        case .ended(let wait)?: return wait
        case .open?, nil: return nil
        }
    }

    // MARK: events

    /// End of file, an oversized line, a refusal or shutdown: nothing more is read.
    mutating func inputEnded() {
        update { input in
            switch input {
            case .open: return .ended(nil)
            case .waiting(let wait): return .ended(wait)
            case .ended: return input
            }
        }
    }

    /// Running stopped for `wait` (lines may be left).
    mutating func stopped(_ wait: Wait) {
        update { input in
            switch input {
            case .open, .waiting: return .waiting(wait)
            case .ended: return .ended(wait)
            }
        }
    }

    /// `wait` no longer holds; returns whether the connection was waiting for it (and so runs
    /// and reads again).
    mutating func cleared(_ wait: Wait) -> Bool {
        guard self.wait == wait else { return false }
        update { input in
            if case .ended = input { return .ended(nil) }
            return .open
        }
        return true
    }

    /// The client went away; returns true the first time (the caller stops watching the socket
    /// and drops unsent output). Its own output can no longer be a reason to wait.
    mutating func peerLeft() -> Bool {
        guard case .serving(let input) = phase else { return false }
        switch input {
        case .waiting(.unsentOutput), .waiting(.memory): phase = .abandoned(.open)
        case .ended(.unsentOutput?), .ended(.memory?): phase = .abandoned(.ended(nil))
        default: phase = .abandoned(input)
        }
        return true
    }

    /// Returns true the first time (the caller releases the descriptor).
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }

    /// The end of a turn: close, go on, or what to watch, from what is left to do.
    /// - Parameters:
    ///   - linesLeft: complete lines (or a batch's elements) wait to run.
    ///   - unanswered: requests still running.
    ///   - unsentBytes: answer bytes wait for the socket.
    ///   - answersLeft: answers wait to be written (behind, or in, a streamed one).
    func settlement(linesLeft: Bool, unanswered: Int, unsentBytes: Bool, answersLeft: Bool) -> Settlement {
        switch phase {
        case .closed:
            return .close
        case .abandoned(let input):
            // Nobody reads the answers: what matters is only what is left to run.
            if input == .ended(nil) && !linesLeft { return .close }
            if case .waiting(.nextTurn) = input { return .watch(readable: false, writable: false) }
            return .continueNextTurn
        case .serving(let input):
            if input == .ended(nil) && !linesLeft && unanswered == 0 && !unsentBytes && !answersLeft {
                return .close
            }
            return .watch(readable: input == .open, writable: unsentBytes)
        }
    }

    private mutating func update(_ change: (Input) -> Input) {
        switch phase {
        case .serving(let input): phase = .serving(change(input))
        case .abandoned(let input): phase = .abandoned(change(input))
        case .closed: break
        }
    }
}
