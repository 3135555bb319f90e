/// The pieces of an absolute http(s) URL that `tlsName` pinning needs: scheme, host, port, and the rest.
struct URLTarget: Equatable {
    var scheme: String
    /// As written in the URL, so an IPv6 literal keeps its brackets.
    var host: String
    var port: Int?
    /// Path, query and fragment, from the first `/`, `?` or `#` on.
    var rest: String

    init?(_ url: String) {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        scheme = url[..<schemeEnd.lowerBound].lowercased()
        let afterScheme = url[schemeEnd.upperBound...]
        let authorityEnd =
            afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        var authority = afterScheme[..<authorityEnd]
        rest = String(afterScheme[authorityEnd...])
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[...close])
            let afterHost = authority[authority.index(after: close)...]
            if afterHost.hasPrefix(":") {
                portText = afterHost.dropFirst()
            } else if !afterHost.isEmpty {
                return nil
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        guard !host.isEmpty else { return nil }
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
        }
    }

    var effectivePort: Int { port ?? (scheme == "https" ? 443 : 80) }

    /// The same URL addressed to `host`.
    func replacingHost(with newHost: String) -> String {
        scheme + "://" + newHost + (port.map { ":\($0)" } ?? "") + rest
    }

    /// The CURLOPT_CONNECT_TO entry sending `name:port` to this URL's host and port.
    func connectToEntry(for name: String) -> String {
        "\(name):\(effectivePort):\(host):\(effectivePort)"
    }
}
