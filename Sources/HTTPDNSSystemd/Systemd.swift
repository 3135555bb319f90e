import CSystemd
import Glibc
import HTTPDNSSystem

/// The service manager's side channel (sd_notify(3)): readiness, status, stopping, watchdog.
public struct SystemdNotifier: Sendable {
    public init() {}

    /// Sends `KEY=VALUE` lines. Returns false when there is no service manager to tell, and throws
    /// when sending failed (the caller logs it: a lost READY=1 makes systemd time the unit out).
    @discardableResult
    public func notify(raw message: String) throws(SystemError) -> Bool {
        let rc = sd_notify(0, message)
        if rc < 0 { throw SystemError(errno: Errno(rawValue: -rc), call: "sd_notify") }
        return rc > 0
    }

    @discardableResult
    public func ready(status: String) throws(SystemError) -> Bool {
        try notify(raw: "READY=1\nSTATUS=\(Self.oneLine(status))")
    }

    @discardableResult
    public func status(_ text: String) throws(SystemError) -> Bool { try notify(raw: "STATUS=\(Self.oneLine(text))") }

    @discardableResult
    public func stopping(status: String) throws(SystemError) -> Bool {
        try notify(raw: "STOPPING=1\nSTATUS=\(Self.oneLine(status))")
    }

    @discardableResult
    public func watchdog() throws(SystemError) -> Bool { try notify(raw: "WATCHDOG=1") }

    /// RELOADING=1 with MONOTONIC_USEC= (CLOCK_MONOTONIC when the reload began, as sd_notify(3)
    /// asks: the manager tells this reload from an earlier one); READY=1 ends it.
    @discardableResult
    public func reloading(monotonicMicroseconds: Int64, status: String) throws(SystemError) -> Bool {
        try notify(raw: "RELOADING=1\nMONOTONIC_USEC=\(monotonicMicroseconds)\nSTATUS=\(Self.oneLine(status))")
    }

    /// The watchdog interval the manager asked for (WATCHDOG_USEC for this pid), in microseconds.
    public func watchdogIntervalMicroseconds() -> UInt64? {
        var usec: UInt64 = 0
        let rc = sd_watchdog_enabled(0, &usec)
        return rc > 0 && usec > 0 ? usec : nil
    }

    /// A STATUS= value must be one line.
    static func oneLine(_ text: String) -> String {
        String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}

/// Socket activation (sd_listen_fds(3)).
public enum SocketActivation {
    /// The listening Unix stream socket passed by systemd, if any. LISTEN_* are unset so that
    /// children do not inherit them.
    public static func listeningSocket() throws(SystemError) -> FileDescriptor? {
        let count = sd_listen_fds(1)
        if count < 0 { throw SystemError(errno: Errno(rawValue: -count), call: "sd_listen_fds") }
        guard count >= 1 else { return nil }
        let fd = SD_LISTEN_FDS_START
        let isUnixStream = sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0)
        if isUnixStream < 0 { throw SystemError(errno: Errno(rawValue: -isUnixStream), call: "sd_is_socket_unix") }
        guard isUnixStream > 0 else { throw SystemError(errno: .notSocket, call: "socket passed by systemd (fd 3)") }
        let descriptor = FileDescriptor(rawValue: fd)
        try descriptor.setNonBlocking()
        return descriptor
    }
}

/// The boot id (sd_id128_get_boot): session cookies live as long as one boot.
public enum BootID {
    public static func current() throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: 33)
        let rc = csystemd_boot_id(&buffer)
        if rc < 0 { throw SystemError(errno: Errno(rawValue: -rc), call: "sd_id128_get_boot") }
        return String(decoding: buffer.prefix(32).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
