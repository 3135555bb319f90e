import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// HTTPS to the resolver: `CAFile=` adds a trust anchor, and `TLSName=` names the certificate of a
/// resolver addressed by IP (as some providers document for HTTPS by IP). A throwaway CA is made with the
/// `openssl` CLI and a Python TLS server on 127.0.0.1 answers Alibaba-style JSON.
@Suite(.serialized, .enabled(if: TestPKI.toolsPresent, "needs /usr/bin/openssl and /usr/bin/python3"))
struct UpstreamTLSTests {
    /// Made afresh for each test (a few milliseconds of openssl) and removed with it.
    let pki: TestPKI

    init() throws {
        pki = try TestPKI()
    }

    @Test func caFileMakesTheResolverTrusted() throws {
        let server = try TLSFakeResolver(certificate: pki.ipCertificate, key: pki.ipKey)
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba https://127.0.0.1:\(server.port)/100000\nCAFile=\(pki.caCertificate)\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.80"], "\(answer.encodedString)\n\(daemon.log)")
        #expect(answer["result"]?["upstream"] == "alibaba")
        #expect(server.requestLines.contains { $0.contains("/100000/d?") && $0.contains("host=a.example.com") })
    }

    @Test func systemCAsDoNotTrustTheThrowawayCA() throws {
        let server = try TLSFakeResolver(certificate: pki.ipCertificate, key: pki.ipKey)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba https://127.0.0.1:\(server.port)/100000\nTimeout=2s\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(answer["error"]?["code"] == .int(-32002), "\(answer.encodedString)")
        #expect(server.requestLines.isEmpty, "a request went over an untrusted connection")
        let status = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.first?["healthy"] == false)
    }

    @Test func tlsNameVerifiesAnIPAddressedResolverByName() throws {
        let server = try TLSFakeResolver(certificate: pki.nameCertificate, key: pki.nameKey)
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba https://127.0.0.1:\(server.port)/100000\nCAFile=\(pki.caCertificate)\n"
                + "TLSName=resolver.test\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.80"], "\(answer.encodedString)\n\(daemon.log)")
        // The connection went to 127.0.0.1 itself: the fake saw the request.
        #expect(server.requestLines.count == 1)
    }

    @Test func withoutTLSNameANameCertificateDoesNotMatchTheIP() throws {
        let server = try TLSFakeResolver(certificate: pki.nameCertificate, key: pki.nameKey)
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba https://127.0.0.1:\(server.port)/100000\nCAFile=\(pki.caCertificate)\n"
                + "Timeout=2s\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(answer["error"]?["code"] == .int(-32002), "\(answer.encodedString)")
        #expect(server.requestLines.isEmpty)
    }
}

/// A throwaway CA and server certificates signed by it, in a temporary directory removed with
/// the value: by default one for `DNS:resolver.test` ("name"), one for `IP:127.0.0.1` ("ip").
struct TestPKI: Sendable {
    static let openssl = "/usr/bin/openssl"
    static let python = "/usr/bin/python3"
    static var toolsPresent: Bool {
        FileManager.default.isExecutableFile(atPath: openssl) && FileManager.default.isExecutableFile(atPath: python)
    }

    let directory: TemporaryDirectory
    var caCertificate: String { directory.file("ca.pem") }
    var nameCertificate: String { directory.file("name.pem") }
    var nameKey: String { directory.file("name.key") }
    var ipCertificate: String { directory.file("ip.pem") }
    var ipKey: String { directory.file("ip.key") }

    init() throws(HarnessError) {
        try self.init(leaves: [("name", "DNS:resolver.test"), ("ip", "IP:127.0.0.1")])
    }

    /// One certificate per leaf, `FILE.pem` and `FILE.key`, for the subject alternative name given.
    init(leaves: [(file: String, altName: String)]) throws(HarnessError) {
        directory = TemporaryDirectory(prefix: "pki")
        let dir = directory.path
        try Self.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "2", "-subj", "/CN=httpdnsd test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        for (name, altName) in leaves {
            let extensions =
                "subjectAltName=\(altName)\nbasicConstraints=CA:FALSE\n"
                + "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            do {
                try extensions.write(toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
            } catch {
                throw HarnessError("cannot write \(name).ext: \(error)")
            }
            let commonName = altName.split(separator: ":").last ?? ""
            try Self.run([
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(commonName)",
            ])
            try Self.run([
                "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
                "-CAcreateserial", "-out", "\(dir)/\(name).pem", "-days", "2", "-extfile", "\(dir)/\(name).ext",
            ])
        }
    }

    private static func run(_ arguments: [String]) throws(HarnessError) {
        let result: CommandResult
        do {
            result = try runCommand(openssl, arguments)
        } catch {
            throw HarnessError("openssl \(arguments.first ?? ""): \(error)")
        }
        guard result.status == 0 else {
            throw HarnessError("openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }
}

/// `python3` with `http.server` and `ssl` on 127.0.0.1 (kernel-chosen port), answering every GET with
/// an Alibaba v1 body for the asked host, and writing each request line to a log file.
final class TLSFakeResolver {
    let port: Int
    private let directory = TemporaryDirectory(prefix: "tls")
    private let process: ChildProcess

    static let script = """
        import http.server, json, ssl, sys, urllib.parse

        certificate, key, log = sys.argv[1], sys.argv[2], sys.argv[3]

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with open(log, "a") as f:
                    f.write(self.requestline + "\\n")
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                host = query.get("host", [""])[0]
                body = json.dumps({"host": host, "ips": ["203.0.113.80"], "ipsv6": [], "ttl": 60}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    init(certificate: String, key: String) throws {
        let scriptPath = directory.file("server.py")
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let portPath = directory.file("port")
        let server = try ChildProcess(
            TestPKI.python, [scriptPath, certificate, key, directory.file("requests.log")], stdout: portPath,
            stderr: directory.file("stderr"))
        process = server
        // The server prints its port once it listens.
        var port: Int?
        _ = eventually(10) {
            let text = (try? String(contentsOfFile: portPath, encoding: .utf8)) ?? ""
            if text.hasSuffix("\n") { port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return port != nil || !server.isRunning
        }
        guard let port else {
            let log = (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? ""
            throw HarnessError("the TLS fake did not start: \(log)")
        }
        self.port = port
    }

    /// Request lines received so far.
    var requestLines: [String] {
        let text = (try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    deinit {
        // SIGKILL: the child may inherit a signal mask that blocks SIGTERM.
        process.signal(SIGKILL)
        _ = process.wait(timeout: 5)
    }
}
