import HTTPDNSProtocol

/// What a program needs to send one request IP-direct: the addresses for its host, in the form
/// curl's `--resolve` and libcurl's `CURLOPT_RESOLVE` take, so that the URL, the Host header,
/// TLS SNI and the certificate check all keep the host name.
extension HTTPDNSConnection {
    /// The `host:port:addr[,addr...]` entry for `target`, from a `resolve` of its host (both
    /// families, IPv4 first); nil when the host is an IP literal. An answer without any address
    /// is thrown as the daemon's host-not-found error.
    public func resolveEntry(for target: HTTPTarget) throws(ClientError) -> String? {
        guard !target.isIPLiteral else { return nil }
        let answer = try resolve(host: target.host)
        guard let entry = target.resolveEntry(addresses: answer.ipv4 + answer.ipv6) else {
            throw .rpc(.hostNotFound(target.host, reason: .noData))
        }
        return entry
    }
}
