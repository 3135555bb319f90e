import HTTPDNSCore
import Testing

/// The response parser fed whole, in pieces and byte by byte: every split reads the same.
struct HTTP1ResponseParserTests {
    static let limits = HTTP1ResponseParser.Limits(maxBodyBytes: 1000)

    /// Feeds `text` in pieces of `step` bytes, then ends the stream if the response is not complete.
    static func parse(_ text: String, step: Int, limits: HTTP1ResponseParser.Limits = limits)
        -> Result<HTTP1Response, HTTP1ResponseError>
    {
        parse(Array(text.utf8), step: step, limits: limits)
    }

    static func parse(_ bytes: [UInt8], step: Int, limits: HTTP1ResponseParser.Limits = limits)
        -> Result<HTTP1Response, HTTP1ResponseError>
    {
        var parser = HTTP1ResponseParser(limits: limits)
        var offset = 0
        do throws(HTTP1ResponseError) {
            while offset < bytes.count {
                let end = min(bytes.count, offset + step)
                let piece = Array(bytes[offset..<end])
                offset = end
                let response = try piece.withUnsafeBytes { raw in
                    Result { () throws(HTTP1ResponseError) in try parser.feed(raw) }
                }.get()
                if var response {
                    // Bytes left over after the response make the connection unusable.
                    if offset < bytes.count { response.connectionReusable = false }
                    return .success(response)
                }
            }
            return .success(try parser.finish())
        } catch {
            return .failure(error)
        }
    }

    /// The same outcome whole, in 3-byte pieces and byte by byte.
    static func parseEverySplit(_ text: String, limits: HTTP1ResponseParser.Limits = limits)
        -> Result<HTTP1Response, HTTP1ResponseError>
    {
        let whole = parse(text, step: max(1, text.utf8.count), limits: limits)
        #expect(parse(text, step: 3, limits: limits) == whole, "3-byte pieces")
        #expect(parse(text, step: 1, limits: limits) == whole, "byte by byte")
        return whole
    }

    static func body(_ result: Result<HTTP1Response, HTTP1ResponseError>) -> String? {
        guard case .success(let response) = result else { return nil }
        return String(decoding: response.body, as: UTF8.self)
    }

    @Test func contentLengthFramesTheBody() throws {
        let result = Self.parseEverySplit(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nset-cookie:  b=2 \t\r\n\r\nhello")
        let response = try result.get()
        #expect(response.status == 200)
        #expect(
            response.fields == [
                UpstreamHeader("Content-Length", "5"), UpstreamHeader("Set-Cookie", "a=1"),
                UpstreamHeader("set-cookie", "b=2"),
            ])
        #expect(Self.body(result) == "hello")
        #expect(response.connectionReusable)
    }

    @Test func aRepeatedEqualContentLengthIsOneLength() throws {
        let result = Self.parseEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok")
        #expect(Self.body(result) == "ok")
    }

    @Test func chunkedBodiesJoinTheirChunksAndDropExtensionsAndTrailers() throws {
        let result = Self.parseEverySplit(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nX: 1\r\n\r\n"
                + "5;name=value\r\nhello\r\n6 ; last\r\n world\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\n")
        let response = try result.get()
        #expect(Self.body(result) == "hello world")
        #expect(response.fields == [UpstreamHeader("Transfer-Encoding", "Chunked"), UpstreamHeader("X", "1")])
        #expect(response.connectionReusable)
    }

    @Test func withoutLengthTheBodyRunsUntilTheClose() throws {
        let result = Self.parseEverySplit("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
        #expect(Self.body(result) == "until the end")
        #expect(try result.get().connectionReusable == false)
    }

    @Test func interimResponsesAreSkipped() throws {
        let result = Self.parseEverySplit(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        let response = try result.get()
        #expect(response.status == 201)
        #expect(response.fields == [UpstreamHeader("Content-Length", "2")])
        #expect(Self.body(result) == "ok")
    }

    @Test func noContentAndNotModifiedHaveNoBody() throws {
        for status in [204, 304] {
            var parser = HTTP1ResponseParser(limits: Self.limits)
            let head = Array("HTTP/1.1 \(status) X\r\nContent-Length: 7\r\n\r\n".utf8)
            let response = try head.withUnsafeBytes { raw throws(HTTP1ResponseError) in try parser.feed(raw) }
            #expect(response?.status == status)
            #expect(response?.body == [])
            #expect(response?.connectionReusable == true)
        }
    }

    @Test func connectionReuseFollowsTheVersionAndTheConnectionField() throws {
        let cases: [(String, Bool)] = [
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            ("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", false),
            ("HTTP/1.1 200 OK\r\nConnection: x, close\r\nContent-Length: 0\r\n\r\n", false),
            ("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            ("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", true),
            ("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false),
            // Line ends of a bare LF are read as CRLF (RFC 9112 section 2.2).
            ("HTTP/1.1 200 OK\nContent-Length: 0\n\n", true),
        ]
        for (text, reusable) in cases {
            #expect((try? Self.parseEverySplit(text).get())?.connectionReusable == reusable, "\(text)")
        }
    }

    @Test func bytesAfterTheResponseMakeTheConnectionUnusable() throws {
        var parser = HTTP1ResponseParser(limits: Self.limits)
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n".utf8)
        let response = try bytes.withUnsafeBytes { raw throws(HTTP1ResponseError) in try parser.feed(raw) }
        #expect(response?.body == Array("ok".utf8))
        #expect(response?.connectionReusable == false)
        #expect(throws: HTTP1ResponseError.self) { try [UInt8(1)].withUnsafeBytes { raw in try parser.feed(raw) } }
    }

    @Test func malformedHeadsAreRefused() {
        let heads = [
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\nContent-Length: 0\r\n\r\n",
            "HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
            "ICY 200 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nName : value\r\n\r\n",
            "HTTP/1.1 200 OK\r\n: value\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        ]
        for head in heads {
            let result = Self.parseEverySplit(head)
            guard case .failure(.malformed) = result else {
                Issue.record("accepted: \(head.debugDescription) -> \(result)")
                continue
            }
        }
    }

    @Test func everyLimitEndsInAnError() {
        let big = String(repeating: "a", count: 70_000)
        let cases: [(String, HTTP1ResponseError)] = [
            ("HTTP/1.1 200 OK\r\nX: \(big)\r\n\r\n", .headTooLarge(limit: 65_536)),
            // The interim responses count toward the same head limit.
            (String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 3000), .headTooLarge(limit: 65_536)),
            ("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", .bodyTooLarge(limit: 1000)),
            ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", .bodyTooLarge(limit: 1000)),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", .bodyTooLarge(limit: 1000)),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n",
                .bodyTooLarge(limit: 1000)
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + String(repeating: "x", count: 1000)
                    + "\r\n1\r\n", .bodyTooLarge(limit: 1000)
            ),
            ("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 1001), .bodyTooLarge(limit: 1000)),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 2000)
                    + "\r\n",
                .malformed("a chunk-size line over 1024 bytes")
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 20_000),
                .malformed("a trailer section over 16384 bytes")
            ),
        ]
        for (text, expected) in cases {
            #expect(Self.parseEverySplit(text) == .failure(expected), "\(text.prefix(80).debugDescription)")
        }
        let exactly = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 1000)
        #expect(Self.body(Self.parseEverySplit(exactly))?.count == 1000)
    }

    @Test func anEarlyCloseIsTruncation() throws {
        var parser = HTTP1ResponseParser(limits: Self.limits)
        #expect(throws: HTTP1ResponseError.truncated("the connection closed before a response")) {
            try parser.finish()
        }
        #expect(parser.receivedBytes == 0)
        for text in [
            "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        ] {
            guard case .failure(.truncated) = Self.parseEverySplit(text) else {
                Issue.record("not truncated: \(text.debugDescription)")
                continue
            }
        }
    }
}
