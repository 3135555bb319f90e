import CHTTPDNSShims
import Glibc

extension SystemResolver {
    /// The nsswitch.conf service name of httpdnsd's NSS module (libnss_httpdns.so.2).
    public static let nssModuleService = "httpdns"

    /// glibc's hosts services when nsswitch.conf names none.
    public static let defaultHostsServices = "files dns"

    /// Keeps getaddrinfo in this process (the `system` upstream, and libcurl looking up the
    /// upstreams' own host names) out of the httpdns NSS module, which would ask this daemon
    /// again: the process's hosts services become nsswitch.conf's without `httpdns`.
    ///
    /// The daemon does this rather than the module recognizing the daemon: under socket
    /// activation the module's peer credentials name systemd, not the daemon, and glibc keeps
    /// the choice for the life of the process (`__nss_configure_lookup` also stops it reloading
    /// nsswitch.conf, so adding httpdns to the file later cannot bring the loop back). Call it
    /// before any thread resolves a name. Returns the services now in effect.
    @discardableResult
    public static func bypassNSSModule(nsswitchPath: String = "/etc/nsswitch.conf") throws(SystemError) -> String {
        // glibc treats an unreadable nsswitch.conf as an empty one.
        let text = (try? Files.read(nsswitchPath, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let services = hostsServices(inNSSwitch: text, leavingOut: nssModuleService)
        guard chttpdns_configure_hosts_lookup(services) == 0 else {
            throw SystemError(
                errno: Errno.current.rawValue == 0 ? .noMemory : .current, call: "__nss_configure_lookup hosts")
        }
        return services
    }

    /// The services of nsswitch.conf's `hosts:` line (the last one counts, as in glibc) without
    /// `service` and the `[STATUS=ACTION]` block after it, tokenized as glibc does (bytes, C-locale
    /// white space). glibc's default when nothing is left.
    public static func hostsServices(inNSSwitch text: String, leavingOut service: String) -> String {
        var line: ArraySlice<UInt8>?
        for candidate in Array(text.utf8).split(separator: UInt8(ascii: "\n")) {
            let trimmed = candidate.drop(while: isSpace)
            let name = trimmed.prefix { !isSpace($0) && $0 != UInt8(ascii: ":") }
            guard name.elementsEqual("hosts".utf8) else { continue }
            line = trimmed.dropFirst(name.count).drop { isSpace($0) || $0 == UInt8(ascii: ":") }
        }
        guard let services = line else { return defaultHostsServices }
        var rest = services
        var kept: [String] = []
        while true {
            rest = rest.drop(while: isSpace)
            let name = rest.prefix { !isSpace($0) && $0 != UInt8(ascii: "[") }
            guard !name.isEmpty else { break }
            rest = rest.dropFirst(name.count).drop(while: isSpace)
            var entry = name
            if rest.first == UInt8(ascii: "[") {
                // The block runs to its "]" (or to the end of a line that never closes it).
                let end = rest.firstIndex(of: UInt8(ascii: "]")).map { $0 + 1 } ?? rest.endIndex
                entry = services[name.startIndex..<end]
                rest = rest[end...]
            }
            if !name.elementsEqual(service.utf8) { kept.append(String(decoding: entry, as: UTF8.self)) }
        }
        return kept.isEmpty ? defaultHostsServices : kept.joined(separator: " ")
    }

    /// isspace(3) in the C locale, as glibc's nsswitch.conf parser uses it.
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }
}
