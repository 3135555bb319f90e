/// ASCII case folding for the protocol words and host names the parsers read (RFC 6265bis
/// attribute names, URL schemes, host names): only A-Z change, so UTF-8 stays valid.
@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
}

/// `bytes` ASCII-lowercased, as a new string.
func asciiLowercasedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    String(unsafeUninitializedCapacity: bytes.count) { target in
        for index in 0..<bytes.count { target[index] = asciiLowercased(bytes[index]) }
        return bytes.count
    }
}

/// Whether `bytes` begin with `prefix`, a lowercase ASCII literal, ignoring ASCII case.
@inline(__always)
func startsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, with prefix: StaticString) -> Bool {
    let count = prefix.utf8CodeUnitCount
    guard bytes.count >= count else { return false }
    let expected = prefix.utf8Start
    for index in 0..<count where asciiLowercased(bytes[index]) != expected[index] {
        assert(asciiLowercased(expected[index]) == expected[index], "\(prefix) is not lowercase")
        return false
    }
    return true
}

/// Whether `bytes` spell `literal`, a lowercase ASCII literal, ignoring ASCII case.
@inline(__always)
func equalsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
    bytes.count == literal.utf8CodeUnitCount && startsIgnoringASCIICase(bytes, with: literal)
}
