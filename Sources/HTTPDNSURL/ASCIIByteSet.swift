/// A set of ASCII bytes as a 128-bit mask: a membership test is a shift and an AND, where the
/// fast lane's byte classes would otherwise compare each byte against up to eleven values.
struct ASCIIByteSet {
    /// Bytes 0x00...0x3F, bit n for byte n.
    let low: UInt64
    /// Bytes 0x40...0x7F, bit n for byte 0x40 + n.
    let high: UInt64

    @inline(__always)
    func contains(_ byte: UInt8) -> Bool {
        if byte < 64 { return (low >> byte) & 1 != 0 }
        return byte < 128 && (high >> (byte &- 64)) & 1 != 0
    }
}

// Computed, so that each use is two constants in the caller; `ASCIIByteSetTests` derives every
// mask from the WHATWG sets it stands for.
extension ASCIIByteSet {
    /// Lowercase letters, digits, `-` and `_`: a domain byte the fast lane keeps as it is.
    @inline(__always)
    static var plainHostByte: ASCIIByteSet { ASCIIByteSet(low: 0x03ff_2000_0000_0000, high: 0x07ff_fffe_8000_0000) }

    /// Printable ASCII that the path percent-encode set leaves alone (not space " # < > ? ` { }),
    /// other than `\` (a separator), `%` (so that no %2e segment slips through) and `/`.
    @inline(__always)
    static var plainPathByte: ASCIIByteSet { ASCIIByteSet(low: 0x2fff_7fd2_0000_0000, high: 0x57ff_fffe_efff_ffff) }

    /// Printable ASCII that the special-query percent-encode set leaves alone (not space " # ' < >).
    @inline(__always)
    static var plainQueryByte: ASCIIByteSet { ASCIIByteSet(low: 0xafff_ff72_0000_0000, high: 0x7fff_ffff_ffff_ffff) }

    /// Printable ASCII that the fragment percent-encode set leaves alone (not space " < > `).
    @inline(__always)
    static var plainFragmentByte: ASCIIByteSet {
        ASCIIByteSet(low: 0xafff_fffa_0000_0000, high: 0x7fff_fffe_ffff_ffff)
    }
}
