import CIDN2

/// IDNA through libidn2 (the one owner of `CIDN2`): the URL parser's "domain to ASCII" and the
/// cookie jar's host canonicalization.
public enum IDNA {
    /// `domainToASCII` as the URL parser takes it (`HTTPURL`'s `toASCII:`).
    public static let urlDomainToASCII: @Sendable (String) -> String? = { domainToASCII($0) }

    /// The WHATWG URL Standard's "domain to ASCII" (UTS #46 ToASCII, non-transitional,
    /// CheckHyphens off), as near as libidn2 gets: the whole name is converted at once, and when
    /// libidn2 refuses it only for a hyphen rule (`--` in places 3 and 4, a leading or trailing
    /// `-`), label by label, ASCII labels being lowercased as UTS #46 does with CheckHyphens
    /// off. libidn2 applies IDNA2008's stricter validity to the rest (it refuses symbols such as
    /// U+2603 that UTS #46 maps): a refusal, never another host. Nil for a name with a NUL.
    public static func domainToASCII(_ domain: String) -> String? {
        guard mayConvert(domain) else { return nil }
        switch convert(domain, flags: IDN2_NONTRANSITIONAL) {
        case .success(let ascii):
            return ascii
        case .failure(let failure)
        where failure.code == Int32(IDN2_2HYPHEN.rawValue) || failure.code == Int32(IDN2_HYPHEN_STARTEND.rawValue):
            var labels: [String] = []
            for label in domain.split(separator: ".", omittingEmptySubsequences: false) {
                if label.utf8.allSatisfy({ $0 < 0x80 }) && !label.lowercased().hasPrefix("xn--") {
                    labels.append(label.lowercased())
                } else if case .success(let ascii) = convert(String(label), flags: IDN2_NONTRANSITIONAL) {
                    labels.append(ascii)
                } else {
                    return nil
                }
            }
            return labels.joined(separator: ".")
        case .failure:
            return nil
        }
    }

    /// libidn2's `idn2_to_ascii_8z`, non-transitional or transitional; nil on any error.
    public static func toASCII(_ name: String, transitional: Bool) -> String? {
        guard mayConvert(name) else { return nil }
        return try? convert(name, flags: transitional ? IDN2_TRANSITIONAL : IDN2_NONTRANSITIONAL).get()
    }

    /// The most UTF-8 a name can take whose A-labels fit DNS's 253 octets: each code point is at
    /// least one octet of its A-label and at most four of UTF-8. libidn2 maps every code point,
    /// so its time grows with the input; only a name of code points UTS #46 ignores could be
    /// longer, and is refused.
    public static let maxInputBytes = 4 * 253

    /// Without a NUL (libidn2 reads C strings) and within `maxInputBytes`.
    private static func mayConvert(_ name: String) -> Bool {
        name.utf8.count <= maxInputBytes && !name.utf8.contains(0)
    }

    private struct Failure: Error {
        var code: Int32
    }

    private static func convert(_ name: String, flags: idn2_flags) -> Result<String, Failure> {
        var output: UnsafeMutablePointer<CChar>?
        let status = idn2_to_ascii_8z(name, &output, Int32(flags.rawValue))
        defer { if let output { idn2_free(output) } }
        guard status == Int32(IDN2_OK.rawValue), let output else { return .failure(Failure(code: status)) }
        return .success(String(cString: output))
    }
}
