import CHTTPDNSShims
import Glibc

/// The system resolver (getaddrinfo(3)): /etc/hosts, nsswitch, resolv.conf. It blocks, so the
/// daemon calls it on a worker thread only.
public enum SystemResolver {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The name does not exist (EAI_NONAME) or has no address of the family (EAI_NODATA).
        case noSuchHost
        /// Temporary failure (EAI_AGAIN) or any other resolver error.
        case failed(String)

        public var description: String {
            switch self {
            case .noSuchHost: return "no such host"
            case .failed(let reason): return reason
            }
        }
    }

    public struct Addresses: Sendable, Equatable {
        public var ipv4: [String]
        public var ipv6: [String]
    }

    /// Looks up A and/or AAAA addresses of `host`; addresses come back in resolver order,
    /// without duplicates.
    public static func lookup(_ host: String, ipv4: Bool, ipv6: Bool) -> Result<Addresses, Failure> {
        var hints = addrinfo()
        hints.ai_family = ipv4 && ipv6 ? AF_UNSPEC : (ipv6 ? AF_INET6 : AF_INET)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0 else {
            switch rc {
            case EAI_NONAME, chttpdns_EAI_NODATA, chttpdns_EAI_ADDRFAMILY: return .failure(.noSuchHost)
            case EAI_SYSTEM: return .failure(.failed("getaddrinfo: \(Errno.current)"))
            default: return .failure(.failed("getaddrinfo: " + String(cString: gai_strerror(rc))))
            }
        }
        defer { freeaddrinfo(list) }
        var result = Addresses(ipv4: [], ipv6: [])
        var node = list
        while let current = node {
            defer { node = current.pointee.ai_next }
            guard let address = current.pointee.ai_addr else { continue }
            if address.pointee.sa_family == sa_family_t(AF_INET) {
                let text = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafePointer(to: sin.pointee.sin_addr) {
                        format(family: AF_INET, $0, length: Int(INET_ADDRSTRLEN))
                    }
                }
                if ipv4, let text, !result.ipv4.contains(text) { result.ipv4.append(text) }
            } else if address.pointee.sa_family == sa_family_t(AF_INET6) {
                let text = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafePointer(to: sin6.pointee.sin6_addr) {
                        format(family: AF_INET6, $0, length: Int(INET6_ADDRSTRLEN))
                    }
                }
                if ipv6, let text, !result.ipv6.contains(text) { result.ipv6.append(text) }
            }
        }
        if result.ipv4.isEmpty && result.ipv6.isEmpty { return .failure(.noSuchHost) }
        return .success(result)
    }

    private static func format(family: Int32, _ address: UnsafeRawPointer, length: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: length)
        guard inet_ntop(family, address, &buffer, socklen_t(length)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
