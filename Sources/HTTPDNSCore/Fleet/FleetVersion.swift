/// The identity of one daemon in a fleet: 16 random bytes written as 32 lowercase hexadecimal
/// characters, made once and kept in the daemon's state (so it survives restarts and is never
/// shared by two machines, as a cloned `/etc/machine-id` could be).
public struct FleetMachineID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Characters in the text form.
    public static let length = 32

    public let text: String

    /// Accepts exactly 32 lowercase hexadecimal characters.
    public init?(_ text: String) {
        guard text.utf8.count == Self.length, text.utf8.allSatisfy(Self.isLowerHex) else { return nil }
        self.text = text
    }

    /// From 16 (random) bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length / 2 else { return nil }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        self.text = String(decoding: text, as: UTF8.self)
    }

    public static func < (lhs: FleetMachineID, rhs: FleetMachineID) -> Bool {
        lhs.text.utf8.lexicographicallyPrecedes(rhs.text.utf8)
    }

    public var description: String { text }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }
}

/// When and where a cookie change was made: the order of last-writer-wins. A later update time
/// wins; equal times are broken by the machine id, so every daemon picks the same winner
/// whatever order the changes arrive in.
public struct FleetVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Unix milliseconds of the change (never negative).
    public let updatedAtMs: Int64
    public let machine: FleetMachineID

    public init(updatedAtMs: Int64, machine: FleetMachineID) {
        self.updatedAtMs = max(0, updatedAtMs)
        self.machine = machine
    }

    public static func < (lhs: FleetVersion, rhs: FleetVersion) -> Bool {
        if lhs.updatedAtMs != rhs.updatedAtMs { return lhs.updatedAtMs < rhs.updatedAtMs }
        return lhs.machine < rhs.machine
    }

    /// 16 hexadecimal digits of the time, then the machine id: 48 characters whose byte order is
    /// the version order. The snapshot script compares these byte by byte, without being able to
    /// read the sealed value.
    public var sortKey: String {
        let hex = String(UInt64(updatedAtMs), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + machine.text
    }

    /// Length of `sortKey`.
    public static let sortKeyLength = 16 + FleetMachineID.length

    public var description: String { "\(updatedAtMs)@\(machine.text)" }
}
