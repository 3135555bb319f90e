import CHTTPDNSHostsMap
import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// The daemon's side of the hosts map (httpdnsd(8), SHARED HOSTS MAP): the file `map/hosts.map` in
/// the socket's directory, which the NSS module maps read-only to answer a repeated lookup without
/// a round trip. The layout, keys and sealing are C (`CHTTPDNSHostsMap`), shared with the module.
///
/// What is published is what the NSS module was answered over the socket, per uid and under that
/// uid's key (which only its own answers carry): a uid's first lookup of an answer still reaches
/// the daemon (address memory, monitor, fair-share marking), its later lookups within that
/// answer's TTL come from the map. On the loop thread only.
final class HostsMapPublisher {
    private let writer: OpaquePointer
    /// The file's directory (the socket's).
    let directory: String
    /// Its slots (`HostsMapSize=`).
    let slots: Int

    /// The map's directory in the socket's.
    static let directoryName = HOSTS_MAP_DIRECTORY_NAME

    /// Whether the module could trust a map below `socketDirectory`: not when others may write it
    /// (such as /tmp), where none is made.
    static func mayLive(in socketDirectory: String) -> Bool {
        var status = stat()
        return lstat(socketDirectory, &status) == 0 && status.st_mode & 0o022 == 0
    }

    /// Creates the map anew in `directory` (made, mode 0755, when systemd did not), replacing
    /// (and retiring) the one there; throws with errno when it cannot. The directory must be the
    /// daemon's and writable by nobody else: the module trusts the file by that.
    init(directory: String, slots: Int) throws(SystemError) {
        if mkdir(directory, 0o755) != 0 && Errno.current != .fileExists {
            throw SystemError(errno: .current, call: "mkdir")
        }
        var status = stat()
        guard lstat(directory, &status) == 0 else { throw SystemError(errno: .current, call: "lstat") }
        guard (status.st_mode & S_IFMT) == S_IFDIR, status.st_uid == geteuid(), status.st_mode & 0o022 == 0 else {
            throw SystemError(errno: .permissionDenied, call: "hosts map directory check")
        }
        guard let writer = hosts_map_writer_create(directory, UInt32(slots)) else {
            throw SystemError(errno: .current, call: "hosts_map_writer_create")
        }
        self.writer = writer
        self.directory = directory
        self.slots = slots
    }

    /// Whether `withdraw` took the file away (and closed the writer).
    private var withdrawn = false

    deinit { if !withdrawn { hosts_map_writer_close(writer) } }

    /// Retires and removes the file, for a daemon that keeps no map any more (`HostsMapSize=0`
    /// on reload): its readers go to the socket, and no file is left behind for them to map.
    /// The publisher must not be used after.
    func withdraw() {
        guard !withdrawn else { return }
        withdrawn = true
        hosts_map_writer_withdraw(writer, directory)
    }

    /// `uid`'s key to this file, in hex: what its resolves with `hostsMap` carry
    /// (`hostsMapKey`), to that uid alone.
    func userKey(uid: UInt32) -> String {
        var key = [UInt8](repeating: 0, count: Int(HOSTS_MAP_KEY_BYTES))
        hosts_map_writer_user_key(writer, uid, &key)
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(2 * key.count)
        for byte in key {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// Publishes `host`'s `family` part for `uid`: `addresses` (empty: NO_DATA) until `expiresAt`.
    /// False when the map cannot hold it (more than 8 addresses, a name the module never looks up
    /// in the map): the socket keeps answering it.
    @discardableResult
    func publish(host: String, family: IPFamily, uid: UInt32, addresses: [String], expiresAt: MonotonicInstant) -> Bool
    {
        let joined = addresses.joined(separator: "\0")
        return joined.withCString { text in
            hosts_map_writer_publish(
                writer, host, family == .ipv4 ? Int32(HOSTS_MAP_IPV4) : Int32(HOSTS_MAP_IPV6), uid, text,
                UInt32(addresses.count), expiresAt.nanoseconds) == 0
        }
    }

    /// The path a listening Unix socket is bound to (what systemd passed names it only there).
    static func boundPath(of fd: FileDescriptor) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd.rawValue, $0, &length) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        // An abstract socket (a leading NUL) has no directory.
        return path.hasPrefix("/") ? path : nil
    }

    /// Every record published so far stops being an answer, before the caller acknowledges what
    /// changed (flush, reload, network change).
    func flush() { hosts_map_writer_flush(writer) }
}

@available(*, unavailable)
extension HostsMapPublisher: Sendable {}
