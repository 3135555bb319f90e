import HTTPDNSProtocol
import XCTest

/// Typical results of the methods (as the contract prints them), read through the typed results the client uses.
/// (XCTest, so that both of `swift test`'s runners report what they ran.)
final class APIExamplesXCTests: XCTestCase {
    func testResolveExampleDecodes() throws {
        let json = try JSONParser.parse(
            #"{"host":"api.example.com","ipv4":["203.0.113.10","203.0.113.11"],"ipv6":[],"ttl":57,"stale":false,"source":"cache"}"#
        )
        let result = try XCTUnwrap(ResolveResult(json: json))
        XCTAssertEqual(result.host, "api.example.com")
        XCTAssertEqual(result.ipv4, ["203.0.113.10", "203.0.113.11"])
        XCTAssertEqual(result.ttl, 57)
        XCTAssertEqual(result.source, .cache)
        XCTAssertEqual(result.json, json)
    }

    func testHandleSetCookieExampleDecodes() throws {
        let json = try JSONParser.parse(
            #"{"host":"a.example.com","stored":1,"rejected":[{"index":1,"reason":"public-suffix"}]}"#)
        let result = try XCTUnwrap(SetCookieResult(json: json))
        XCTAssertEqual(result.stored, 1)
        XCTAssertEqual(result.rejected, [SetCookieResult.Rejection(index: 1, reason: "public-suffix")])
    }

    func testCookieHeaderExampleDecodes() throws {
        let result = try XCTUnwrap(
            CookieHeaderResult(json: JSONParser.parse(#"{"header":"sid=abc; lang=en","count":2}"#)))
        XCTAssertEqual(result.header, "sid=abc; lang=en")
        XCTAssertEqual(result.count, 2)
    }
}
