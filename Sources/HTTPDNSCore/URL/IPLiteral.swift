/// Recognizes IPv4 and IPv6 address literals in host strings and writes them in one canonical
/// form (RFC 5952 for IPv6), through `IPAddress`.
///
/// Cookies are keyed by host strings, so two spellings of one address (`::1` and `0:0::1`)
/// must become the same string before they are compared.
public enum IPLiteral {
    /// The canonical text of `text` if it is an IPv4 dotted quad or an IPv6 address
    /// (with or without brackets, no zone id), else nil.
    public static func canonical(_ text: String) -> String? {
        address(text)?.description
    }

    /// True for an IPv4 or IPv6 literal (see `canonical`).
    public static func isIPLiteral(_ text: String) -> Bool {
        address(text) != nil
    }

    /// The address `text` spells, IPv6 with or without brackets.
    public static func address(_ text: String) -> IPAddress? {
        if text.utf8.first == UInt8(ascii: "[") {
            guard text.utf8.count >= 2, text.utf8.last == UInt8(ascii: "]") else { return nil }
            return IPAddress(ipv6: String(decoding: text.utf8.dropFirst().dropLast(), as: UTF8.self))
        }
        return IPAddress(text)
    }
}
