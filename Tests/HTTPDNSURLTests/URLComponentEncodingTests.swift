import Testing

@testable import HTTPDNSURL

struct URLComponentEncodingTests {
    @Test func onlyUnreservedCharactersStayAsTheyAre() {
        #expect(URLComponentEncoding.queryValue("AZaz09-._~") == "AZaz09-._~")
        #expect(URLComponentEncoding.queryValue("a b&c=d/e?f#g+h%i") == "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25i")
        #expect(URLComponentEncoding.queryValue("!*'();:@$,[]") == "%21%2A%27%28%29%3B%3A%40%24%2C%5B%5D")
        #expect(URLComponentEncoding.queryValue("例.com") == "%E4%BE%8B.com")
        #expect(URLComponentEncoding.queryValue("\u{0}\u{7F}") == "%00%7F")
        #expect(URLComponentEncoding.queryValue("") == "")
    }

    @Test func everyByteDecodesBackToItself() {
        let bytes = (0...255).map { UInt8($0) }
        let text = String(decoding: bytes.filter { $0 < 0x80 }, as: UTF8.self)
        let encoded = URLComponentEncoding.queryValue(text)
        #expect(encoded.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: " ") })
        let decoded = encoded.utf8.withContiguousStorageIfAvailable { PercentEncoding.decode($0) } ?? []
        #expect(decoded == Array(text.utf8))
    }
}
