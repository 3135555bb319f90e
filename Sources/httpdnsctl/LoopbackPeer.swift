import Glibc

/// Whose a loopback TCP connection is: the uid the kernel lists for the peer's socket in
/// /proc/net/tcp (any local user can connect to a loopback port; only the caller's own
/// programs may use the caller's proxy, whose resolves are the caller's).
enum LoopbackPeer {
    /// The uid owning the socket whose local end is `peer` and remote end `local` (both as
    /// the accepted socket sees them), or nil when no such line is listed.
    static func owner(peer: sockaddr_in, local: sockaddr_in, table: String = "/proc/net/tcp") -> uid_t? {
        guard let text = readSmallFile(table) else { return nil }
        let wantedLocal = entry(peer)
        let wantedRemote = entry(local)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 7, fields[1] == wantedLocal, fields[2] == wantedRemote else { continue }
            return uid_t(fields[7])
        }
        return nil
    }

    /// `0100007F:1F90`: the address's four bytes as the kernel prints them (the stored word in
    /// host order) and the port in hex.
    static func entry(_ address: sockaddr_in) -> String {
        func hex(_ value: UInt32, width: Int) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return hex(address.sin_addr.s_addr, width: 8) + ":" + hex(UInt32(UInt16(bigEndian: address.sin_port)), width: 4)
    }

    private static func readSmallFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        // A busy machine's table is some megabytes at most; the cap keeps a read bounded.
        while bytes.count < 64 << 20 {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
