import Glibc
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSCurl

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// A response the fake sends byte for byte.
private func raw(_ text: String, thenClose: Bool = false) -> FakeHTTPAction {
    .raw(Array(text.utf8), thenClose: thenClose)
}

/// Plain `http://` requests, which HTTPClient serves itself: framing, connection reuse, the deadline
/// and malformed responses, against loopback fakes that answer with the bytes each test gives.
struct PlainHTTPTests {
    @Test func chunkedBodiesArriveWholeAndKeepTheConnection() throws {
        let server = try FakeHTTPServer { _ in
            raw(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
                    + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n")
        }
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<2 {
            let response = try client.perform(HTTPRequest(url: server.baseURL + "/")).get()
            #expect(response.status == 200)
            #expect(text(response.body) == "hello world")
            #expect(response.headers == [HTTPHeader("Transfer-Encoding", "chunked"), HTTPHeader("X-A", "1")])
        }
        #expect(server.acceptedConnections == 1)
    }

    @Test func theRequestHeadNamesTheHostWithItsPort() throws {
        let server = try FakeHTTPServer { _ in .text("ok") }
        defer { server.stop() }
        _ = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/a/b?c=d#fragment")).get()
        let request = try #require(server.requests.first)
        #expect(request.target == "/a/b?c=d")
        #expect(request.header("Host") == "127.0.0.1:\(server.port)")
        #expect(request.header("Connection") == "keep-alive")
    }

    @Test func aBodyUntilTheCloseEndsTheConnection() throws {
        let server = try FakeHTTPServer { _ in raw("HTTP/1.1 200 OK\r\n\r\nuntil close", thenClose: true) }
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<2 {
            #expect(text(try client.perform(HTTPRequest(url: server.baseURL + "/")).get().body) == "until close")
        }
        #expect(server.acceptedConnections == 2)
    }

    @Test func interimResponsesAreSkipped() throws {
        let server = try FakeHTTPServer { _ in
            raw(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                    + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: y\r\n\r\nok")
        }
        defer { server.stop() }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/")).get()
        #expect(response.status == 200)
        #expect(response.headers == [HTTPHeader("Content-Length", "2"), HTTPHeader("X", "y")])
        #expect(text(response.body) == "ok")
    }

    @Test func anHTTP10AnswerWithoutKeepAliveIsNotReused() throws {
        let server = try FakeHTTPServer { _ in raw("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok") }
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<2 { #expect(try client.perform(HTTPRequest(url: server.baseURL + "/")).get().status == 200) }
        #expect(server.acceptedConnections == 2)
    }

    /// The server reads the second request on the kept connection and closes it unanswered (as one
    /// whose idle timer fired at that moment would): the request is sent again on a fresh connection.
    @Test func aReusedConnectionClosedBeforeTheAnswerIsRetriedOnce() throws {
        let server = try FakeHTTPServer { request in
            request.connection == 0 && request.target == "/second" ? .close : .text(request.target)
        }
        defer { server.stop() }
        let client = HTTPClient()
        #expect(text(try client.perform(HTTPRequest(url: server.baseURL + "/first")).get().body) == "/first")
        #expect(text(try client.perform(HTTPRequest(url: server.baseURL + "/second")).get().body) == "/second")
        #expect(server.requests.map(\.connection) == [0, 0, 1])
    }

    @Test func aFreshConnectionClosedBeforeTheAnswerIsNotRetried() throws {
        let server = try FakeHTTPServer { _ in .close }
        defer { server.stop() }
        let result = HTTPClient().perform(HTTPRequest(url: server.baseURL + "/"))
        #expect((try? result.get()) == nil)
        #expect(server.acceptedConnections == 1)
        #expect(server.requestCount == 1)
    }

    @Test func anIdleConnectionTheServerClosedIsReplaced() throws {
        let server = try FakeHTTPServer { _ in raw("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", thenClose: true) }
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<3 { #expect(text(try client.perform(HTTPRequest(url: server.baseURL + "/")).get().body) == "ok") }
        #expect(server.acceptedConnections == 3)
        #expect(server.requestCount == 3)
    }

    @Test func aConnectionIsKeptPerHostAndPort() throws {
        let one = try FakeHTTPServer { _ in .text("one") }
        let two = try FakeHTTPServer { _ in .text("two") }
        defer {
            one.stop()
            two.stop()
        }
        let client = HTTPClient()
        for server in [one, two, one] { _ = try client.perform(HTTPRequest(url: server.baseURL + "/")).get() }
        #expect(one.acceptedConnections == 2)
        #expect(two.acceptedConnections == 1)
    }

    /// Real time is what is tested: a listener that never accepts (the kernel completes the handshake
    /// into its backlog) and never answers; the 300 ms deadline ends the wait. The upper bound leaves
    /// a busy machine seconds of slack.
    @Test func anOriginThatNeverAnswersTimesOut() throws {
        let (listener, port) = try TCPSocket.listenLoopback()
        defer { listener.close() }
        let start = ContinuousClock.now
        let result = HTTPClient().perform(HTTPRequest(url: "http://127.0.0.1:\(port)/", timeoutMs: 300))
        let elapsed = ContinuousClock.now - start
        guard case .failure(let error) = result else {
            Issue.record("a silent origin must time out")
            return
        }
        #expect(error.code == .timeout, "\(error)")
        #expect(elapsed >= .milliseconds(250))
        #expect(elapsed < .seconds(5))
    }

    /// Real time is what is tested: the deadline covers the whole response, so a body that stops
    /// halfway times out (the server keeps the connection open, waiting for another request).
    @Test func theDeadlineCoversTheWholeBody() throws {
        let server = try FakeHTTPServer { _ in raw("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf") }
        defer { server.stop() }
        let start = ContinuousClock.now
        let result = HTTPClient().perform(HTTPRequest(url: server.baseURL + "/", timeoutMs: 300))
        let elapsed = ContinuousClock.now - start
        guard case .failure(let error) = result else {
            Issue.record("half a body must time out")
            return
        }
        #expect(error.code == .timeout, "\(error)")
        #expect(error.detail.contains("received"))
        #expect(elapsed >= .milliseconds(250))
        #expect(elapsed < .seconds(5))
    }

    /// Real time is what is tested: an origin that pads a chunked body without end, faster than it
    /// is read (one body byte per kilobyte of chunk extension), never lets a read block; the
    /// deadline still ends the request. The upper bound leaves a busy machine seconds of slack.
    @Test func aResponseThatNeverLetsAReadBlockStillTimesOut() throws {
        let (listener, port) = try TCPSocket.listenLoopback()
        defer { listener.close() }
        final class Stop: Sendable { let requested = Atomic<Bool>(false) }
        let stop = Stop()
        let padding = Array(("1;" + String(repeating: "x", count: 1_000) + "\r\nA\r\n").utf8)
        let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let listenerFD = listener.rawValue
        let writer = spawnThread(joinable: true) {
            let fd = accept(listenerFD, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            var request = [UInt8](repeating: 0, count: 4_096)
            _ = recv(fd, &request, request.count, 0)
            _ = head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let block = Array(repeating: padding, count: 64).flatMap { $0 }
            while !stop.requested.load(ordering: .relaxed) {
                if block.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) < 0 { return }
            }
        }
        defer {
            stop.requested.store(true, ordering: .relaxed)
            pthread_join(writer, nil)
        }
        let start = ContinuousClock.now
        let result = HTTPClient().perform(
            HTTPRequest(url: "http://127.0.0.1:\(port)/", timeoutMs: 300))
        let elapsed = ContinuousClock.now - start
        guard case .failure(let error) = result else {
            Issue.record("an endless response must time out")
            return
        }
        #expect(error.code == .timeout, "\(error)")
        #expect(elapsed < .seconds(5))
    }

    @Test func aChunkedBodyOverTheCapIsRefused() throws {
        let chunk = String(repeating: "x", count: 800)
        let server = try FakeHTTPServer { _ in
            raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n\(chunk)\r\n320\r\n\(chunk)\r\n0\r\n\r\n")
        }
        defer { server.stop() }
        let client = HTTPClient()
        guard case .failure(let error) = client.perform(HTTPRequest(url: server.baseURL + "/", maxBodyBytes: 1000))
        else {
            Issue.record("1600 bytes must exceed a 1000-byte cap")
            return
        }
        #expect(error.code == .bodyTooLarge)
        #expect(try client.perform(HTTPRequest(url: server.baseURL + "/", maxBodyBytes: 1600)).get().body.count == 1600)
    }

    @Test func malformedResponsesAreTransportErrors() throws {
        let heads = [
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "SSH-2.0-OpenSSH_9.2\r\n",
            "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n",
        ]
        let server = try FakeHTTPServer { request in
            raw(heads[Int(request.path.dropFirst()) ?? 0])
        }
        defer { server.stop() }
        let client = HTTPClient()
        for index in heads.indices {
            guard case .failure(let error) = client.perform(HTTPRequest(url: server.baseURL + "/\(index)")) else {
                Issue.record("accepted: \(heads[index].prefix(80).debugDescription)")
                continue
            }
            #expect(error.code == .transport, "\(index): \(error)")
        }
        // Each malformed answer closed its connection.
        #expect(server.acceptedConnections == heads.count)
    }

    @Test func headersThatWouldSplitTheHeadAreRefused() {
        for header in [HTTPHeader("X", "a\r\nInjected: 1"), HTTPHeader("Bad Name", "v"), HTTPHeader("", "v")] {
            let result = HTTPClient().perform(HTTPRequest(url: "http://127.0.0.1:9/", headers: [header]))
            guard case .failure(let error) = result else {
                Issue.record("sent \(header)")
                continue
            }
            #expect(error.code == .invalidRequest)
        }
    }

    @Test func onlyPlainHTTPToAnAddressWithoutAProxyIsServedWithoutLibcurl() throws {
        let ipv6 = try #require(PlainHTTPTarget(HTTPRequest(url: "http://[::1]:8080/d?dn=a.com#x")))
        #expect(ipv6.authority == "[::1]:8080")
        #expect(ipv6.port == 8080)
        #expect(ipv6.requestTarget == "/d?dn=a.com")
        #expect(ipv6.addressBytes == [UInt8](repeating: 0, count: 15) + [1])
        let alibaba = try #require(PlainHTTPTarget(HTTPRequest(url: "http://203.107.1.1/100000/d?host=a.com")))
        #expect(alibaba.authority == "203.107.1.1")
        #expect(alibaba.port == 80)
        #expect(alibaba.addressBytes == [203, 107, 1, 1])
        // TLSName= names an https upstream's certificate; libcurl ignores it for http too.
        #expect(PlainHTTPTarget(HTTPRequest(url: "http://127.0.0.1/", tlsName: "resolver.test")) != nil)
        #expect(PlainHTTPTarget(HTTPRequest(url: "http://127.0.0.1/", proxy: "")) != nil)
        for request in [
            HTTPRequest(url: "https://127.0.0.1/"),
            HTTPRequest(url: "http://127.0.0.1/", proxy: "http://127.0.0.1:3128"),
            HTTPRequest(url: "http://user:secret@127.0.0.1/"), HTTPRequest(url: "http://a.test\\@127.0.0.1/"),
            HTTPRequest(url: "ftp://127.0.0.1/"), HTTPRequest(url: "not a url"),
            // A name is libcurl's, whose resolver keeps the deadline.
            HTTPRequest(url: "http://resolver.test:81/"), HTTPRequest(url: "http://localhost/"),
        ] {
            #expect(PlainHTTPTarget(request) == nil, "\(request.url)")
        }
    }

    @Test func theHeadCarriesDefaultsTheRequestCanReplaceOrRemove() throws {
        let target = try #require(PlainHTTPTarget(HTTPRequest(url: "http://127.0.0.1/q")))
        let post = HTTPRequest(
            url: "http://127.0.0.1/q", method: .post, headers: [HTTPHeader("Accept", ""), HTTPHeader("X-A", "1")],
            body: [0, 0xff])
        #expect(
            target.message(for: post)
                == Array(
                    "POST /q HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n"
                        .utf8)
                + [0, 0xff])
        let get = HTTPRequest(url: "http://127.0.0.1/q", headers: [HTTPHeader("host", "name.test")])
        #expect(
            target.message(for: get)
                == Array("GET /q HTTP/1.1\r\nAccept: */*\r\nConnection: keep-alive\r\nhost: name.test\r\n\r\n".utf8))
    }
}
