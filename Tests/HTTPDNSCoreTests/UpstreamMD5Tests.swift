import Testing

@testable import HTTPDNSCore

struct MD5Tests {
    /// RFC 1321 appendix A.5 test suite.
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
        (
            "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a"
        ),
    ])
    func rfc1321Vectors(message: String, digest: String) {
        #expect(MD5.hexDigest(message) == digest)
    }

    /// Padding edges: 55, 56 and 64 bytes need one, two and two blocks.
    /// Expected values computed with coreutils `md5sum` when the test was written.
    @Test func paddingBoundaries() {
        #expect(MD5.hexDigest(String(repeating: "a", count: 55)) == "ef1772b6dff9a122358552954ad0df65")
        #expect(MD5.hexDigest(String(repeating: "a", count: 56)) == "3b0c8ac703f828b04c6c197006d17218")
        #expect(MD5.hexDigest(String(repeating: "a", count: 64)) == "014842d480b571495a4a0363793f7367")
    }
}
