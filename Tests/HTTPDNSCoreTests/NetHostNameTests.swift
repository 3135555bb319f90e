import HTTPDNSCore
import Testing

struct HostNameTests {
    @Test(arguments: [
        ("Example.COM.", "example.com"),
        ("www.example.com", "www.example.com"),
        ("_dmarc.example.com", "_dmarc.example.com"),
        ("a-b.c0", "a-b.c0"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("localhost", "localhost"),
        ("1.2.3.4", "1.2.3.4"),
    ])
    func acceptsAndNormalizes(raw: String, expected: String) {
        #expect(HostName.validate(raw) == .success(expected))
    }

    @Test func enforcesLengthLimits() {
        let label63 = String(repeating: "a", count: 63)
        let name253 = [label63, label63, label63, String(repeating: "d", count: 61)].joined(separator: ".")
        #expect(name253.utf8.count == 253)
        #expect(HostName.validate(name253) == .success(name253))
        #expect(HostName.validate(name253 + ".") == .success(name253))
        #expect(HostName.validate(name253 + "d") == .failure(.tooLong(254)))
        #expect(HostName.validate(label63 + ".com") == .success(label63 + ".com"))
        #expect(HostName.validate(label63 + "a.com") == .failure(.labelTooLong(label63 + "a")))
    }

    @Test(arguments: [
        ("", HostNameError.empty),
        (".", HostNameError.empty),
        ("a..b", HostNameError.emptyLabel),
        (".a", HostNameError.emptyLabel),
        ("a.b..", HostNameError.emptyLabel),
        ("-a.com", HostNameError.hyphenAtLabelEdge("-a")),
        ("a-.com", HostNameError.hyphenAtLabelEdge("a-")),
        ("a b.com", HostNameError.invalidCharacter(label: "a b")),
        ("b\u{fc}cher.de", HostNameError.invalidCharacter(label: "b\u{fc}cher")),
        ("a/b", HostNameError.invalidCharacter(label: "a/b")),
        ("a\u{0}.com", HostNameError.invalidCharacter(label: "a\u{0}")),
        ("[::1]", HostNameError.invalidCharacter(label: "[::1]")),
    ])
    func rejectsWithReason(raw: String, error: HostNameError) {
        #expect(HostName.validate(raw) == .failure(error))
        #expect(!error.description.isEmpty)
    }

    @Test func errorMessagesStayOnOneLine() {
        guard case .failure(let error) = HostName.validate("a\nb.com") else {
            Issue.record("a newline must be rejected")
            return
        }
        #expect(!error.description.contains("\n"))
    }
}
