/// The head of a request to the proxy: where it goes and, for plain http, the head to send
/// the origin instead.
struct ProxyRequest: Equatable {
    var isConnect: Bool
    var host: String
    var port: UInt16
    /// For plain http: the request with an origin-form target and `Connection: close`.
    var originHead: [UInt8] = []

    /// Hop-by-hop headers the proxy answers for itself (RFC 9110 section 7.6.1).
    static let hopByHop: Set<String> = ["connection", "proxy-connection", "keep-alive", "te", "trailer", "upgrade"]

    /// nil for anything but `CONNECT host:port` or an absolute `http://` target.
    init?(head: [UInt8]) {
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n" as Character, omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
        let method = String(requestLine[0])
        let target = String(requestLine[1])
        if method == "CONNECT" {
            guard let (host, port) = Self.hostAndPort(target, defaultPort: nil) else { return nil }
            self.isConnect = true
            self.host = host
            self.port = port
            return
        }
        guard target.lowercased().hasPrefix("http://") else { return nil }
        let rest = target.dropFirst("http://".count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let (host, port) = Self.hostAndPort(String(rest[..<authorityEnd]), defaultPort: 80) else { return nil }
        var path = String(rest[authorityEnd...])
        if path.hasPrefix("#") { path = "" }
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if !path.hasPrefix("/") { path = "/" + path }
        var out = "\(method) \(path) \(requestLine[2])\r\n"
        for line in lines where !line.isEmpty {
            let name = line.prefix { $0 != ":" }.lowercased()
            if Self.hopByHop.contains(name) { continue }
            out += line + "\r\n"
        }
        out += "Connection: close\r\n\r\n"
        self.isConnect = false
        self.host = host
        self.port = port
        self.originHead = Array(out.utf8)
    }

    /// The origin's response head with its hop-by-hop headers replaced by `Connection: close`.
    static func closingResponseHead(_ head: [UInt8]) -> [UInt8] {
        let lines = String(decoding: head, as: UTF8.self).split(
            separator: "\r\n" as Character, omittingEmptySubsequences: false)
        var out = (lines.first ?? "") + "\r\n"
        for line in lines.dropFirst() where !line.isEmpty {
            if hopByHop.contains(line.prefix { $0 != ":" }.lowercased()) { continue }
            out += line + "\r\n"
        }
        return Array((out + "Connection: close\r\n\r\n").utf8)
    }

    /// `host:port`, `[v6]:port`; the host lower-cased without brackets. Port 0 is refused.
    static func hostAndPort(_ authority: String, defaultPort: UInt16?) -> (String, UInt16)? {
        var host = Substring(authority)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        if host.contains("@") || host.isEmpty { return nil }
        let port: UInt16
        if let portText {
            guard let value = UInt16(portText), value != 0 else { return nil }
            port = value
        } else {
            guard let defaultPort else { return nil }
            port = defaultPort
        }
        return (host.lowercased(), port)
    }
}
