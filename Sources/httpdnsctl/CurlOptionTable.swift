import HTTPDNSProtocol

/// What httpdnsctl knows of curl's command line: which options take a value, which are flags,
/// and the long name of each one-letter option. Taken from curl 7.88's `--help all` plus the
/// options later releases added, so that an argument is never mistaken for the URL. curl itself
/// still parses the command line it is given; this table only has to agree on its shape.
enum CurlOptionTable {
    /// Long names (without `--`) of the options that take a value.
    static let valued: Set<String> = [
        "abstract-unix-socket", "alt-svc", "aws-sigv4", "cacert", "capath", "cert", "cert-type", "ciphers", "config",
        "connect-timeout", "connect-to", "continue-at", "cookie", "cookie-jar", "create-file-mode", "crlfile",
        "curves", "data", "data-ascii", "data-binary", "data-raw", "data-urlencode", "delegation", "dns-interface",
        "dns-ipv4-addr", "dns-ipv6-addr", "dns-servers", "doh-url", "dump-header", "ech", "egd-file", "engine",
        "etag-compare", "etag-save", "expect100-timeout", "form", "form-string", "ftp-account",
        "ftp-alternative-to-user", "ftp-method", "ftp-port", "ftp-ssl-ccc-mode", "happy-eyeballs-timeout-ms",
        "haproxy-clientip", "header", "hostpubmd5", "hostpubsha256", "hsts", "interface", "ip-tos",
        "ipfs-gateway", "json", "keepalive-cnt", "keepalive-time", "key", "key-type", "knownhosts", "krb", "krb4",
        "libcurl", "limit-rate", "local-port", "login-options", "mail-auth", "mail-from", "mail-rcpt",
        "max-filesize", "max-redirs", "max-time", "netrc-file", "noproxy", "oauth2-bearer", "output", "output-dir",
        "parallel-max", "parallel-max-host", "pass", "pinnedpubkey", "preproxy", "proto", "proto-default",
        "proto-redir", "proxy", "proxy-cacert", "proxy-capath", "proxy-cert", "proxy-cert-type", "proxy-ciphers",
        "proxy-crlfile", "proxy-header", "proxy-key", "proxy-key-type", "proxy-pass", "proxy-pinnedpubkey",
        "proxy-service-name", "proxy-tls13-ciphers", "proxy-tlsauthtype", "proxy-tlspassword", "proxy-tlsuser",
        "proxy-user", "proxy1.0", "pubkey", "quote", "random-file", "range", "rate", "referer", "request",
        "request-target", "resolve", "retry", "retry-delay", "retry-max-time", "sasl-authzid", "service-name",
        "sigalgs", "socks4", "socks4a", "socks5", "socks5-gssapi-service", "socks5-hostname", "speed-limit",
        "speed-time", "ssl-sessions", "stderr", "telnet-option", "tftp-blksize", "time-cond", "tls-max",
        "tls13-ciphers", "tlsauthtype", "tlspassword", "tlsuser", "trace", "trace-ascii", "trace-config",
        "unix-socket", "upload-file", "upload-flags", "url", "url-query", "user", "user-agent", "variable",
        "vlan-priority", "write-out",
    ]

    /// Long names of the options that take no value. Those that curl documents as `--no-NAME`
    /// are listed as `NAME`: curl accepts `--no-` before any flag.
    static let flags: Set<String> = [
        "help",
        "alpn", "anyauth", "append", "basic", "buffer", "ca-native", "cert-status", "clobber", "compressed",
        "compressed-ssh", "create-dirs", "crlf", "digest", "disable", "disable-eprt", "disable-epsv",
        "disallow-username-in-url", "doh-cert-status", "doh-insecure", "dump-ca-embed", "eprt", "epsv", "fail",
        "fail-early", "fail-with-body", "false-start", "follow", "form-escape", "ftp-create-dirs", "ftp-pasv",
        "ftp-pret", "ftp-skip-pasv-ip", "ftp-ssl", "ftp-ssl-ccc", "ftp-ssl-control", "ftp-ssl-reqd", "get",
        "globoff", "haproxy-protocol", "head", "http0.9", "http1.0", "http1.1", "http2", "http2-prior-knowledge",
        "http3", "http3-only", "ignore-content-length", "include", "insecure", "ipv4", "ipv6",
        "junk-session-cookies", "keepalive", "list-only", "location", "location-trusted", "mail-rcpt-allowfails",
        "manual", "metalink", "mptcp", "negotiate", "netrc", "netrc-optional", "next", "npn", "ntlm", "ntlm-wb",
        "out-null", "parallel", "parallel-immediate", "path-as-is", "post301", "post302", "post303", "progress-bar",
        "progress-meter", "proxy-anyauth", "proxy-basic", "proxy-ca-native", "proxy-digest", "proxy-http2",
        "proxy-insecure", "proxy-negotiate", "proxy-ntlm", "proxy-ssl-allow-beast", "proxy-ssl-auto-client-cert",
        "proxy-tlsv1", "proxytunnel", "raw", "remote-header-name", "remote-name", "remote-name-all", "remote-time",
        "remove-on-error", "retry-all-errors", "retry-connrefused", "sasl-ir", "sessionid", "show-error",
        "show-headers", "silent", "skip-existing", "socks5-basic", "socks5-gssapi", "socks5-gssapi-nec", "ssl",
        "ssl-allow-beast", "ssl-auto-client-cert", "ssl-no-revoke", "ssl-reqd", "ssl-revoke-best-effort", "sslv2",
        "sslv3", "styled-output", "suppress-connect-headers", "tcp-fastopen", "tcp-nodelay", "tftp-no-options",
        "tls-earlydata", "tlsv1", "tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3", "tr-encoding", "trace-ids",
        "trace-time", "use-ascii", "verbose", "version", "xattr",
    ]

    /// httpdnsctl's own options, each with whether it takes a value. curl has none of these names
    /// (`--host` is not even an unambiguous prefix of one of curl's), and they are recognized
    /// only spelled out in full, so nothing curl reads is taken from it.
    static let httpdnsctlOptions: [String: Bool] = ["fallback": false, "host": true]

    /// The long name of each one-letter option.
    static let letters: [Character: String] = [
        "#": "progress-bar", "0": "http1.0", "1": "tlsv1", "2": "sslv2", "3": "sslv3", "4": "ipv4", "6": "ipv6",
        ":": "next", "A": "user-agent", "B": "use-ascii", "C": "continue-at", "D": "dump-header", "E": "cert",
        "F": "form", "G": "get", "H": "header", "I": "head", "J": "remote-header-name", "K": "config",
        "L": "location", "M": "manual", "N": "buffer", "O": "remote-name", "P": "ftp-port", "Q": "quote",
        "R": "remote-time", "S": "show-error", "T": "upload-file", "U": "proxy-user", "V": "version",
        "X": "request", "Y": "speed-limit", "Z": "parallel", "a": "append", "b": "cookie", "c": "cookie-jar",
        "d": "data", "e": "referer", "f": "fail", "g": "globoff", "h": "help", "i": "include",
        "j": "junk-session-cookies", "k": "insecure", "l": "list-only", "m": "max-time", "n": "netrc",
        "o": "output", "p": "proxytunnel", "q": "disable", "r": "range", "s": "silent", "t": "telnet-option",
        "u": "user", "v": "verbose", "w": "write-out", "x": "proxy", "y": "speed-time", "z": "time-cond",
    ]

    /// Names that are aliases of another option in some curl release.
    static let aliases: [String: String] = ["show-headers": "include"]

    /// The option a long-option word (without `--`) names: exact names first, then, as curl 7.x
    /// does, an unambiguous prefix. `--no-NAME` negates a flag. nil for an unknown or ambiguous word.
    static func longOption(_ word: String) -> (name: String, negated: Bool)? {
        if let name = exactOrPrefix(word) { return (aliases[name] ?? name, false) }
        if word.hasPrefix("no-"), let name = exactOrPrefix(String(word.dropFirst(3))), flags.contains(name) {
            return (aliases[name] ?? name, true)
        }
        return nil
    }

    private static func exactOrPrefix(_ word: String) -> String? {
        if valued.contains(word) || flags.contains(word) { return word }
        guard !word.isEmpty else { return nil }
        let matches = valued.union(flags).filter { $0.hasPrefix(word) }
        return matches.count == 1 ? matches.first : nil
    }

    static func takesValue(_ name: String) -> Bool { valued.contains(name) }

    /// The option a mistyped long option (`--lcoation`, `--fallbak`, `--no-bufer`) most likely
    /// meant, with its `--`: among curl's options, their `--no-` forms and httpdnsctl's own;
    /// nil when none is close (the word then goes to curl as typed).
    static func suggestion(for typed: String) -> String? {
        guard typed.hasPrefix("--") else { return nil }
        let word = String(typed.dropFirst(2))
        var names = Array(valued) + Array(flags) + Array(httpdnsctlOptions.keys)
        if word.hasPrefix("no-") { names += flags.map { "no-" + $0 } }
        return NameSuggestion.closest(to: word, among: names).map { "--" + $0 }
    }
}
