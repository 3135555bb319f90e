import Glibc
import HTTPDNSCurl
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// HTTPClient against the loopback fake server; only 127.0.0.1 is ever contacted.
struct HTTPClientTests {
    @Test func getReturnsStatusHeadersAndBody() throws {
        let server = try FakeHTTPServer { _ in .text("hello", status: 200) }
        defer { server.stop() }
        let client = HTTPClient()
        let response = try client.perform(
            HTTPRequest(
                url: server.baseURL + "/100000/d?host=a.com&query=4,6",
                headers: [HTTPHeader("Accept", "application/json")])
        ).get()
        #expect(response.status == 200)
        #expect(text(response.body) == "hello")
        #expect(response.values(of: "content-type") == ["text/plain"])
        #expect(response.totalTime >= 0)
        let request = try #require(server.requests.first)
        #expect(request.method == "GET")
        #expect(request.target == "/100000/d?host=a.com&query=4,6")
        #expect(request.queryValue("query") == "4,6")
        #expect(request.header("accept") == "application/json")
    }

    @Test func serverErrorsAreResponsesNotFailures() throws {
        let server = try FakeHTTPServer { _ in .json(#"{"code":"InternalError"}"#, status: 500) }
        defer { server.stop() }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/")).get()
        #expect(response.status == 500)
        #expect(text(response.body) == #"{"code":"InternalError"}"#)
    }

    @Test func hangTimesOutWithinTheDeadline() throws {
        let server = try FakeHTTPServer { _ in .hang }
        defer { server.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        let result = HTTPClient().perform(HTTPRequest(url: server.baseURL + "/", timeoutMs: 300))
        let elapsed = clock.now - start
        guard case .failure(let error) = result else {
            Issue.record("a hanging server must time out")
            return
        }
        #expect(error.code == .timeout)
        // Real time is what is tested: the 300 ms deadline ends the wait, where the server would
        // hang for ever; the upper bound leaves a busy machine seconds of slack.
        #expect(elapsed >= .milliseconds(250))
        #expect(elapsed < .seconds(5))
        #expect(server.requestCount == 1)
    }

    @Test func delayedAnswerWithinTheDeadlineArrives() throws {
        let server = try FakeHTTPServer { _ in .delay(ms: 100, then: .text("late")) }
        defer { server.stop() }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/", timeoutMs: 3000)).get()
        #expect(text(response.body) == "late")
    }

    @Test func closedConnectionIsATransportError() throws {
        let server = try FakeHTTPServer { _ in .close }
        defer { server.stop() }
        guard case .failure(let error) = HTTPClient().perform(HTTPRequest(url: server.baseURL + "/")) else {
            Issue.record("a closed connection must fail")
            return
        }
        #expect(error.code == .transport)
        #expect(!error.description.isEmpty)
    }

    @Test func refusedConnectionIsATransportError() throws {
        let server = try FakeHTTPServer { _ in .text("x") }
        let url = server.baseURL + "/"
        server.stop()
        guard case .failure(let error) = HTTPClient().perform(HTTPRequest(url: url, timeoutMs: 1000)) else {
            Issue.record("a stopped server must refuse")
            return
        }
        #expect(error.code == .transport)
    }

    @Test func bodyCapAborts() throws {
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 5000)
        let server = try FakeHTTPServer { request in
            // Without Content-Length libcurl only learns the size while reading: both paths must be capped.
            request.path == "/declared"
                ? .respond(status: 200, headers: [], body: big)
                : .respond(status: 200, headers: [("Connection", "close")], body: big)
        }
        defer { server.stop() }
        let client = HTTPClient()
        for path in ["/declared", "/streamed"] {
            let result = client.perform(HTTPRequest(url: server.baseURL + path, maxBodyBytes: 1000))
            guard case .failure(let error) = result else {
                Issue.record("\(path): a 5000-byte body must exceed a 1000-byte cap")
                continue
            }
            #expect(error.code == .bodyTooLarge, "\(path): \(error)")
        }
        let fits = try client.perform(HTTPRequest(url: server.baseURL + "/declared", maxBodyBytes: 5000)).get()
        #expect(fits.body.count == 5000)
    }

    @Test func repeatedHeadersStaySeparate() throws {
        let server = try FakeHTTPServer { _ in
            .respond(
                status: 200,
                headers: [
                    ("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2, c=3; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
                ], body: [])
        }
        defer { server.stop() }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/")).get()
        #expect(
            response.values(of: "Set-Cookie") == ["a=1; Path=/", "b=2, c=3; Expires=Wed, 21 Oct 2015 07:28:00 GMT"])
    }

    @Test func connectionIsReused() throws {
        let server = try FakeHTTPServer { _ in .text("ok") }
        defer { server.stop() }
        let client = HTTPClient()
        for _ in 0..<3 {
            #expect(try client.perform(HTTPRequest(url: server.baseURL + "/")).get().status == 200)
        }
        #expect(server.acceptedConnections == 1)
        #expect(server.requests.map(\.connection) == [0, 0, 0])
    }

    @Test func postSendsTheBody() throws {
        let server = try FakeHTTPServer { request in .respond(status: 200, headers: [], body: request.body) }
        defer { server.stop() }
        let body: [UInt8] = [0, 1, 2, 0xff, 0, 42]
        let response = try HTTPClient().perform(
            HTTPRequest(
                url: server.baseURL + "/dns-query", method: .post,
                headers: [HTTPHeader("Content-Type", "application/dns-message")], body: body)
        ).get()
        #expect(response.body == body)
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.body == body)
        #expect(request.header("Content-Type") == "application/dns-message")
        #expect(request.header("Expect") == nil)
    }

    @Test func redirectsAreNotFollowed() throws {
        let server = try FakeHTTPServer { _ in .respond(status: 302, headers: [("Location", "/elsewhere")], body: []) }
        defer { server.stop() }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/")).get()
        #expect(response.status == 302)
        #expect(server.requestCount == 1)
    }

    @Test func proxyEnvironmentIsIgnored() throws {
        let server = try FakeHTTPServer { _ in .text("direct") }
        defer { server.stop() }
        setenv("http_proxy", "http://127.0.0.1:9", 1)
        defer { unsetenv("http_proxy") }
        let response = try HTTPClient().perform(HTTPRequest(url: server.baseURL + "/", timeoutMs: 2000)).get()
        #expect(text(response.body) == "direct")
    }

    @Test func unsupportedSchemesAreRejected() {
        guard case .failure(let error) = HTTPClient().perform(HTTPRequest(url: "ftp://127.0.0.1/")) else {
            Issue.record("ftp must be refused")
            return
        }
        #expect(error.code == .invalidRequest)
    }

    /// With tlsName an https URL is sent to the name but connects to the URL's address: the plain-HTTP
    /// fake then gets a TLS ClientHello on its port (the name itself is never resolved), which proves
    /// where the connection went.
    @Test func tlsNameConnectsToTheURLAddress() throws {
        let server = try FakeHTTPServer { _ in .close }
        defer { server.stop() }
        let result = HTTPClient().perform(
            HTTPRequest(
                url: "https://127.0.0.1:\(server.port)/", timeoutMs: 1000, tlsName: "resolvers.invalid"))
        guard case .failure(let error) = result else {
            Issue.record("TLS to a plain HTTP server must fail")
            return
        }
        // The fake waits for an HTTP request line that never comes, so libcurl gives up on the handshake.
        #expect(error.code == .timeout || error.code == .transport)
        #expect(server.acceptedConnections == 1)
        #expect(server.requestCount == 0)
    }

    /// A hung request on one client does not hold up another client on another thread: the fast
    /// request completes while the hung one is still outstanding (an ordering, not a timing, check).
    /// Both clients run on POSIX threads of their own: on the concurrency pool (two threads here),
    /// other suites' blocking tests could hold every thread, and the slow client never started.
    @Test func clientsOnSeparateThreadsDoNotBlockEachOther() throws {
        let server = try FakeHTTPServer { request in request.path == "/slow" ? .hang : .text("fast") }
        let base = server.baseURL
        let slowFinished = Mutex(false)
        let slow = spawnThread(named: "slow client", joinable: true) {
            _ = HTTPClient().perform(HTTPRequest(url: base + "/slow", timeoutMs: 20_000))
            slowFinished.withLock { $0 = true }
        }
        defer {
            // Stopping the server ends the hung request.
            server.stop()
            pthread_join(slow, nil)
        }
        try #require(eventually { server.requestCount > 0 })
        let fast = try HTTPClient().perform(HTTPRequest(url: base + "/fast")).map(\.status).get()
        #expect(fast == 200)
        #expect(slowFinished.withLock { $0 } == false)
    }
}

struct FakeAlibabaServerTests {
    @Test func answersLikeTheService() throws {
        let server = try FakeHTTPServer.alibaba(answers: [
            "www.example.com": (v4: ["192.0.2.1"], v6: ["2001:db8::1"], ttl: 60)
        ])
        defer { server.stop() }
        let client = HTTPClient()
        let base = server.alibabaURL()
        let both = try client.perform(HTTPRequest(url: base + "/d?host=www.example.com&query=4,6")).get()
        #expect(both.status == 200)
        #expect(
            text(both.body)
                == #"{"host":"www.example.com","ips":["192.0.2.1"],"ipsv6":["2001:db8::1"],"ttl":60,"origin_ttl":60}"#)
        let v4 = try client.perform(HTTPRequest(url: base + "/d?host=www.example.com")).get()
        #expect(text(v4.body) == #"{"host":"www.example.com","ips":["192.0.2.1"],"ttl":60,"origin_ttl":60}"#)
        let unknown = try client.perform(HTTPRequest(url: base + "/d?host=nope.example.com")).get()
        #expect(unknown.status == 400)
        #expect(text(unknown.body) == #"{"code":"InvalidHost"}"#)
        let account = try client.perform(HTTPRequest(url: server.baseURL + "/999/d?host=www.example.com")).get()
        #expect(account.status == 403)
        #expect(text(account.body) == #"{"code":"InvalidAccount"}"#)
        let batch = try client.perform(HTTPRequest(url: base + "/resolve?host=www.example.com,nope.example.com")).get()
        #expect(
            text(batch.body) == #"{"dns":[{"host":"www.example.com","ips":["192.0.2.1"],"ttl":60,"origin_ttl":60}]}"#)
        #expect(server.requestCount == 5)
    }

    @Test func signedMode() throws {
        let server = try FakeHTTPServer.alibaba(
            answers: ["a.com": (v4: ["192.0.2.1"], v6: [], ttl: 60)],
            signatureCheck: { signed, t, s in signed == "a.com" && t == "100" && s == "good" })
        defer { server.stop() }
        let client = HTTPClient()
        let base = server.alibabaURL()
        let unsigned = try client.perform(HTTPRequest(url: base + "/d?host=a.com")).get()
        #expect(text(unsigned.body) == #"{"code":"UnsignedInterfaceDisabled"}"#)
        let wrong = try client.perform(HTTPRequest(url: base + "/sign_d?host=a.com&t=100&s=bad")).get()
        #expect(wrong.status == 403)
        #expect(text(wrong.body) == #"{"code":"InvalidSignature"}"#)
        let good = try client.perform(HTTPRequest(url: base + "/sign_d?host=a.com&t=100&s=good")).get()
        #expect(good.status == 200)
    }
}
