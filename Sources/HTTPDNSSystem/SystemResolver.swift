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
        resolve(host, family: ipv4 && ipv6 ? AF_UNSPEC : (ipv6 ? AF_INET6 : AF_INET)).flatMap { found in
            var result = Addresses(ipv4: [], ipv6: [])
            for address in found {
                if address.count == 4, ipv4, let text = format(family: AF_INET, address, length: Int(INET_ADDRSTRLEN)),
                    !result.ipv4.contains(text)
                {
                    result.ipv4.append(text)
                } else if address.count == 16, ipv6,
                    let text = format(family: AF_INET6, address, length: Int(INET6_ADDRSTRLEN)),
                    !result.ipv6.contains(text)
                {
                    result.ipv6.append(text)
                }
            }
            return result.ipv4.isEmpty && result.ipv6.isEmpty ? .failure(.noSuchHost) : .success(result)
        }
    }

    /// getaddrinfo's addresses for stream sockets, as 4 or 16 network-order bytes; never empty.
    private static func resolve(_ host: String, family: Int32) -> Result<[[UInt8]], Failure> {
        var hints = addrinfo()
        hints.ai_family = family
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
        var found: [[UInt8]] = []
        var node = list
        while let current = node {
            defer { node = current.pointee.ai_next }
            guard let address = current.pointee.ai_addr else { continue }
            if address.pointee.sa_family == sa_family_t(AF_INET) {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    withUnsafeBytes(of: sin.pointee.sin_addr) { found.append(Array($0)) }
                }
            } else if address.pointee.sa_family == sa_family_t(AF_INET6) {
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    withUnsafeBytes(of: sin6.pointee.sin6_addr) { found.append(Array($0)) }
                }
            }
        }
        return found.isEmpty ? .failure(.noSuchHost) : .success(found)
    }

    private static func format(family: Int32, _ address: [UInt8], length: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: length)
        guard inet_ntop(family, address, &buffer, socklen_t(length)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
