import Glibc
import HTTPDNSProtocol
import Testing

@testable import httpdnsctl

/// The pieces of `httpdnsctl browser open` that decide what goes where: pairing raw headers
/// with URLs, the two-way diff that must not echo, the cookie shapes, the proxy's request heads.
struct BrowserSyncTests {
    typealias Received = SetCookieTracker.Received

    static func cookie(
        _ name: String, _ value: String = "v", domain: String = "app.example.test", hostOnly: Bool = true,
        expires: Int64? = nil, httpOnly: Bool = false, sameSite: CookieSameSite = .default
    ) -> BrowserCookie {
        BrowserCookie(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: "/", expires: expires, secure: false,
            httpOnly: httpOnly, sameSite: sameSite)
    }

    // MARK: SetCookieTracker

    @Test func rawHeadersPairWithTheirURLInEitherOrder() {
        var tracker = SetCookieTracker()
        let headers: JSONObject = ["Set-Cookie": "a=1\nb=2; HttpOnly", "content-type": "text/html"]
        #expect(tracker.rawHeaders(headers, session: "S", request: "1") == nil)
        #expect(
            tracker.responseURL("http://h.test/x", session: "S", request: "1")
                == Received(url: "http://h.test/x", setCookie: ["a=1", "b=2; HttpOnly"]))
        #expect(tracker.responseURL("http://h.test/y", session: "S", request: "2") == nil)
        #expect(
            tracker.rawHeaders(["set-cookie": "c=3"], session: "S", request: "2")
                == Received(url: "http://h.test/y", setCookie: ["c=3"]))
        // The same request id in another session is another request.
        #expect(tracker.rawHeaders(["set-cookie": "d=4"], session: "T", request: "1") == nil)
    }

    /// A redirect chain shares one request id: the n-th headers belong to the n-th hop's URL,
    /// and a hop without Set-Cookie still takes its turn.
    @Test func eachHopOfARedirectGetsItsOwnHeaders() {
        var tracker = SetCookieTracker()
        #expect(tracker.rawHeaders(["Set-Cookie": "lsid=1"], session: nil, request: "7") == nil)
        #expect(tracker.rawHeaders(["Location": "/b"], session: nil, request: "7") == nil)
        #expect(
            tracker.responseURL("http://login.test/a", session: nil, request: "7")
                == Received(url: "http://login.test/a", setCookie: ["lsid=1"]))
        #expect(tracker.responseURL("http://app.test/b", session: nil, request: "7") == nil, "no Set-Cookie on hop 2")
        #expect(tracker.responseURL("http://app.test/c", session: nil, request: "7") == nil)
        #expect(
            tracker.rawHeaders(["Set-Cookie": "sid=2"], session: nil, request: "7")
                == Received(url: "http://app.test/c", setCookie: ["sid=2"]))
    }

    // MARK: CookieMirror

    /// After a change is carried one way, reading the other side back finds nothing to carry.
    @Test func aChangeIsCarriedOnceAndNotEchoed() {
        var mirror = CookieMirror()
        let sid = Self.cookie("sid", "alice", httpOnly: true)
        let initial = mirror.daemonChanged([sid])
        #expect(initial.stored == [sid] && initial.deleted.isEmpty)
        mirror.browserTook(initial.stored, store: [sid])
        #expect(mirror.browserChanged([sid]).isEmpty)
        #expect(mirror.daemonChanged([sid]).isEmpty)

        // A script cookie: to the daemon once; the daemon's jar read back is no change.
        let js = Self.cookie("js", "x")
        #expect(mirror.browserChanged([sid, js]) == CookieMirror.BrowserChanges(stored: [js]))
        #expect(mirror.daemonChanged([sid, js]).isEmpty)
        #expect(mirror.browserChanged([sid, js]).isEmpty)

        // A native logout: deleted in the browser once; the browser read back is no change.
        #expect(mirror.daemonChanged([js]) == CookieMirror.DaemonChanges(deleted: [sid]))
        #expect(mirror.browserChanged([js]).isEmpty)

        // A deletion in the browser: to the daemon once.
        #expect(mirror.browserChanged([]) == CookieMirror.BrowserChanges(deleted: [js]))
        #expect(mirror.daemonChanged([]).isEmpty)
    }

    /// Expiry dates a second or two apart are the same cookie; a changed value is not.
    @Test func expiryJitterIsNoChangeButAValueIs() {
        var mirror = CookieMirror()
        let a = Self.cookie("a", expires: 2_000_000_000)
        mirror.browserTook(mirror.daemonChanged([a]).stored, store: [a])
        #expect(mirror.browserChanged([Self.cookie("a", expires: 2_000_000_001)]).isEmpty)
        #expect(mirror.browserChanged([Self.cookie("a", "w", expires: 2_000_000_001)]).stored.count == 1)
        #expect(mirror.browserChanged([Self.cookie("a", "w")]).stored.count == 1, "persistent to session")
    }

    /// What one side refuses is neither offered again nor taken for a deletion.
    @Test func refusedCookiesAreNotRetriedNorDeleted() {
        var mirror = CookieMirror()
        let odd = Self.cookie("odd")
        mirror.browserTook(mirror.daemonChanged([odd]).stored, store: [])
        #expect(mirror.daemonChanged([odd]).isEmpty, "offered again")
        #expect(mirror.browserChanged([]).isEmpty, "read as deleted in the browser")
        #expect(mirror.daemonChanged([Self.cookie("odd", "new")]).stored.count == 1, "a new version is offered")

        var other = CookieMirror()
        let local = Self.cookie("local")
        #expect(other.browserChanged([local]).stored == [local])
        other.daemonRefused(local)
        #expect(other.browserChanged([local]).isEmpty, "written again")
        #expect(other.daemonChanged([]).isEmpty, "deleted in the browser")
    }

    // MARK: BrowserCookie

    @Test func browserCookiesReadHostOnlyFromTheDomainsDot() throws {
        let domain = try #require(
            BrowserCookie(devTools: [
                "name": "lang", "value": "en", "domain": ".example.test", "path": "/",
                "expires": .double(2_000_000_000.4),
                "session": false, "secure": true, "httpOnly": false, "sameSite": "Lax",
            ]))
        #expect(domain.domain == "example.test" && !domain.hostOnly && domain.expires == 2_000_000_000)
        #expect(domain.sameSite == .lax && domain.secure)
        let host = try #require(
            BrowserCookie(devTools: [
                "name": "sid", "value": "s", "domain": "app.example.test", "path": "/", "expires": -1, "session": true,
                "httpOnly": true,
            ]))
        #expect(host.hostOnly && host.expires == nil && host.httpOnly && host.sameSite == .default)
        #expect(
            BrowserCookie(devTools: [
                "name": "p", "value": "1", "domain": "a.test", "path": "/", "partitionKey": ["topLevelSite": "x"],
            ]) == nil)
    }

    @Test func cookieParamsAndSetCookieKeepEveryAttribute() {
        let domain = Self.cookie(
            "lang", "en", domain: "example.test", hostOnly: false, expires: 784_111_777, sameSite: .strict)
        #expect(domain.cookieParam["domain"] == ".example.test" && domain.cookieParam["sameSite"] == "Strict")
        #expect(domain.cookieParam["expires"] == .int64(784_111_777))
        let (url, header) = domain.setCookie()
        #expect(url == "https://example.test/")
        #expect(
            header == "lang=en; Domain=example.test; Path=/; Expires=Sun, 06 Nov 1994 08:49:37 GMT; SameSite=Strict")

        let host = Self.cookie("sid", "s", httpOnly: true)
        #expect(host.cookieParam["domain"] == "app.example.test" && host.cookieParam["sameSite"] == nil)
        #expect(host.cookieParam["expires"] == nil, "a session cookie has no expiry")
        #expect(host.setCookie(expired: true).header == "sid=s; Path=/; Max-Age=0; HttpOnly")
        #expect(host.expiredCookieParam["expires"] == .int64(1) && host.expiredCookieParam["value"] == "")
    }

    // MARK: proxy

    @Test func proxyRequestsAreConnectOrAbsoluteHTTP() throws {
        let connect = try #require(ProxyRequest(head: Array("CONNECT App.Example.test:443 HTTP/1.1\r\nHost: x".utf8)))
        #expect(connect.isConnect && connect.host == "app.example.test" && connect.port == 443)
        let v6 = try #require(ProxyRequest(head: Array("CONNECT [2001:db8::1]:8443 HTTP/1.1".utf8)))
        #expect(v6.host == "2001:db8::1" && v6.port == 8443)

        let get = try #require(
            ProxyRequest(
                head: Array(
                    "GET http://app.example.test:8080/a?b=1#frag HTTP/1.1\r\nHost: app.example.test:8080\r\nProxy-Connection: keep-alive\r\nCookie: sid=1"
                        .utf8)))
        #expect(!get.isConnect && get.host == "app.example.test" && get.port == 8080)
        #expect(
            String(decoding: get.originHead, as: UTF8.self)
                == "GET /a?b=1 HTTP/1.1\r\nHost: app.example.test:8080\r\nCookie: sid=1\r\nConnection: close\r\n\r\n")
        #expect(ProxyRequest(head: Array("GET http://h.test HTTP/1.1".utf8))?.port == 80)

        for bad in [
            "GET /relative HTTP/1.1", "CONNECT host HTTP/1.1", "CONNECT h:0 HTTP/1.1", "GET https://h/ HTTP/1.1",
            "junk",
        ] {
            #expect(ProxyRequest(head: Array(bad.utf8)) == nil, "\(bad)")
        }
        let response = ProxyRequest.closingResponseHead(
            Array("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 2".utf8))
        #expect(
            String(decoding: response, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
    }

    @Test func loopbackEntriesAreWrittenAsTheKernelListsThem() {
        var address = sockaddr_in()
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = UInt16(8080).bigEndian
        #expect(LoopbackPeer.entry(address) == "0100007F:1F90")
    }

    @Test func attachEndpointsAreLoopbackWebSockets() {
        #expect(
            WebSocketTransport.endpoint("ws://127.0.0.1:9222/devtools/browser/ab")! == (9222, "/devtools/browser/ab"))
        #expect(WebSocketTransport.endpoint("ws://localhost:9222")! == (9222, "/"))
        for bad in [
            "http://127.0.0.1:9222/", "ws://192.0.2.1:9222/", "ws://127.0.0.1/", "ws://127.0.0.1:0/",
            "wss://127.0.0.1:1/",
        ] {
            #expect(WebSocketTransport.endpoint(bad) == nil, "\(bad)")
        }
        #expect(Base64.encode(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw==")
        #expect(Base64.encode(Array("any carnal pleasu".utf8)) == "YW55IGNhcm5hbCBwbGVhc3U=")
        #expect(Base64.encode(Array("any carnal pleasur".utf8)) == "YW55IGNhcm5hbCBwbGVhc3Vy")
    }
}
