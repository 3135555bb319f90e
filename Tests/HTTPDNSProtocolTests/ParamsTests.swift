import HTTPDNSProtocol
import Testing

/// The error parsing `text` as params produced, or nil when it succeeded. (Closures do not infer typed throws
/// yet, so this takes an untyped one; every accessor throws RPCError.)
func rejection<T>(_ text: String, _ parse: (Params) throws -> T) -> RPCError? {
    do {
        _ = try parse(params(text))
        return nil
    } catch let error as RPCError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

func params(_ text: String) -> Params {
    guard let object = parsed(text)?.objectValue else { preconditionFailure("not an object: \(text)") }
    return Params(object)
}

/// Checks the contract's shape of an invalid-params error: -32602, data.name, data.field, and a message that
/// names the field so a human can find it.
func expectInvalidParams(
    _ error: RPCError?, field: String, mentioning words: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let error else {
        Issue.record("expected -32602 for \(field), got success", sourceLocation: sourceLocation)
        return
    }
    #expect(error.code == .invalidParams, sourceLocation: sourceLocation)
    #expect(error.code.rawValue == -32602, sourceLocation: sourceLocation)
    #expect(error.name == "InvalidParams", sourceLocation: sourceLocation)
    #expect(error.data["field"] == .string(field), sourceLocation: sourceLocation)
    #expect(error.message.contains(field), "\(error.message)", sourceLocation: sourceLocation)
    for word in words {
        #expect(
            error.message.contains(word), "\(error.message) should mention \(word)", sourceLocation: sourceLocation)
    }
}

struct ParamsAccessorTests {
    @Test func requiredString() throws {
        #expect(try params(#"{"host":"a"}"#).requiredString("host") == "a")
        #expect(try params(#"{"host":""}"#).requiredString("host") == "")
        let read: (Params) throws -> String = { try $0.requiredString("host") }
        expectInvalidParams(rejection("{}", read), field: "host", mentioning: ["required"])
        expectInvalidParams(rejection(#"{"host":null}"#, read), field: "host", mentioning: ["required"])
        expectInvalidParams(rejection(#"{"host":1}"#, read), field: "host", mentioning: ["string", "number"])
        expectInvalidParams(rejection(#"{"host":["a"]}"#, read), field: "host", mentioning: ["array"])
    }

    @Test func optionalString() throws {
        #expect(try params("{}").optionalString("host") == nil)
        #expect(try params(#"{"host":null}"#).optionalString("host") == nil)
        #expect(try params(#"{"host":"h"}"#).optionalString("host") == "h")
        let read: (Params) throws -> String? = { try $0.optionalString("host") }
        expectInvalidParams(rejection(#"{"host":true}"#, read), field: "host", mentioning: ["string", "boolean"])
    }

    @Test func optionalBool() throws {
        #expect(try params("{}").optionalBool("forScript") == nil)
        #expect(try params(#"{"forScript":null}"#).optionalBool("forScript") == nil)
        #expect(try params(#"{"forScript":false}"#).optionalBool("forScript") == false)
        #expect(try params(#"{"forScript":true}"#).optionalBool("forScript") == true)
        let read: (Params) throws -> Bool? = { try $0.optionalBool("forScript") }
        for wrong in [#""true""#, "1", "0", "{}"] {
            let error = rejection(#"{"forScript":\#(wrong)}"#, read)
            expectInvalidParams(error, field: "forScript", mentioning: ["boolean"])
        }
    }

    @Test func optionalInt() throws {
        let range: ClosedRange<Int64> = 1...60_000
        let read: (Params) throws -> Int64? = { try $0.optionalInt("timeoutMs", in: range) }
        #expect(try read(params("{}")) == nil)
        #expect(try read(params(#"{"timeoutMs":null}"#)) == nil)
        #expect(try read(params(#"{"timeoutMs":1}"#)) == 1)
        #expect(try read(params(#"{"timeoutMs":60000}"#)) == 60_000)
        for outOfRange in ["0", "-1", "60001", "-0"] {
            let error = rejection(#"{"timeoutMs":\#(outOfRange)}"#, read)
            expectInvalidParams(error, field: "timeoutMs", mentioning: ["1", "60000"])
        }
        for notInteger in ["1.5", "1.0", "1e3", "99999999999999999999", "-99999999999999999999"] {
            let error = rejection(#"{"timeoutMs":\#(notInteger)}"#, read)
            expectInvalidParams(error, field: "timeoutMs", mentioning: ["integer"])
        }
        let string = rejection(#"{"timeoutMs":"5"}"#, read)
        expectInvalidParams(string, field: "timeoutMs", mentioning: ["integer", "string"])
    }

    @Test func requiredStringArray() throws {
        let read: (Params) throws -> [String] = { try $0.requiredStringArray("setCookie") }
        #expect(try read(params(#"{"setCookie":[]}"#)) == [])
        #expect(try read(params(#"{"setCookie":["a=1","b=2"]}"#)) == ["a=1", "b=2"])
        expectInvalidParams(rejection("{}", read), field: "setCookie", mentioning: ["required"])
        let notArray = rejection(#"{"setCookie":"a=1"}"#, read)
        expectInvalidParams(notArray, field: "setCookie", mentioning: ["array", "string"])
        let number = rejection(#"{"setCookie":["a=1",2,"c"]}"#, read)
        expectInvalidParams(number, field: "setCookie[1]", mentioning: ["number"])
        let null = rejection(#"{"setCookie":["a=1",null]}"#, read)
        expectInvalidParams(null, field: "setCookie[1]", mentioning: ["null"])
    }

    @Test func optionalEnum() throws {
        let read: (Params) throws -> AddressFamily? = { try $0.optionalEnum("family", AddressFamily.self) }
        #expect(try read(params("{}")) == nil)
        #expect(try read(params(#"{"family":"ipv6"}"#)) == .ipv6)
        expectInvalidParams(rejection(#"{"family":"IPv6"}"#, read), field: "family", mentioning: ["IPv6"])
        expectInvalidParams(rejection(#"{"family":6}"#, read), field: "family", mentioning: ["string"])
    }

    @Test func duplicateMembersTakeTheLast() throws {
        #expect(try params(#"{"host":1,"host":"b"}"#).requiredString("host") == "b")
    }
}

struct MethodParamsTests {
    @Test func methodNamesAreTheContractsNames() {
        #expect(Method(rawValue: "rpc.discover") == .discover)
        for name in [
            "resolve", "getCookieHeader", "handleSetCookie", "deleteCookies", "listCookies", "importCookies",
            "exportCookies", "flushCache", "status",
        ] {
            #expect(Method(rawValue: name)?.rawValue == name)
        }
        #expect(Method(rawValue: "Resolve") == nil)
    }

    @Test func resolveDefaults() throws {
        let p = try ResolveParams(params(#"{"host":"example.com"}"#))
        #expect(p == ResolveParams(host: "example.com", family: .both, allowStale: true, timeoutMs: nil))
    }

    @Test func resolveAllMembers() throws {
        let p = try ResolveParams(
            params(#"{"host":"h","family":"ipv4","allowStale":false,"timeoutMs":250,"unknown":[1]}"#))
        #expect(p == ResolveParams(host: "h", family: .ipv4, allowStale: false, timeoutMs: 250))
    }

    @Test func resolveErrorsNameTheField() {
        expectInvalidParams(rejection("{}", ResolveParams.init), field: "host")
        expectInvalidParams(rejection(#"{"host":"h","family":"ipv5"}"#, ResolveParams.init), field: "family")
        expectInvalidParams(rejection(#"{"host":"h","allowStale":"no"}"#, ResolveParams.init), field: "allowStale")
        expectInvalidParams(rejection(#"{"host":"h","timeoutMs":0}"#, ResolveParams.init), field: "timeoutMs")
        expectInvalidParams(rejection(#"{"host":"h","timeoutMs":60001}"#, ResolveParams.init), field: "timeoutMs")
    }

    /// An error shows the caller's value quoted, cut after 64 characters: a megabyte of an
    /// unknown value does not come back whole.
    @Test func anErrorShowsALongValueCut() throws {
        let long = String(repeating: "ä", count: 100_000)
        let rejected = rejection(#"{"host":"h","family":"\#(long)"}"#, ResolveParams.init)
        let error = try #require(rejected)
        expectInvalidParams(error, field: "family", mentioning: ["\"" + String(repeating: "ä", count: 64) + "…\""])
        #expect(error.message.utf8.count < 200, "\(error.message.utf8.count) bytes")
        #expect(RPCError.quoted("ipv5") == "\"ipv5\"")
        #expect(RPCError.quoted(String(repeating: "x", count: 64)) == "\"" + String(repeating: "x", count: 64) + "\"")
    }

    @Test func resolveRoundTripsThroughItsJSON() throws {
        for p in [
            ResolveParams(host: "a"), ResolveParams(host: "b", family: .ipv6, allowStale: false, timeoutMs: 60_000),
        ] {
            #expect(try ResolveParams(Params(p.json)) == p)
        }
    }

    @Test func getCookieHeader() throws {
        let defaults = GetCookieHeaderParams(
            url: "https://a.example/", host: nil, forScript: false, siteForCookies: nil, topLevelNavigation: false)
        #expect(try GetCookieHeaderParams(params(#"{"url":"https://a.example/"}"#)) == defaults)
        let full = GetCookieHeaderParams(
            url: "http://192.0.2.1/", host: "a.example", forScript: true, siteForCookies: "https://b.example/",
            topLevelNavigation: true)
        #expect(try GetCookieHeaderParams(Params(full.json)) == full)
        let minimal = GetCookieHeaderParams(url: "u")
        #expect(try GetCookieHeaderParams(Params(minimal.json)) == minimal)
        expectInvalidParams(rejection("{}", GetCookieHeaderParams.init), field: "url")
        expectInvalidParams(rejection(#"{"url":"u","forScript":1}"#, GetCookieHeaderParams.init), field: "forScript")
        expectInvalidParams(
            rejection(#"{"url":"u","siteForCookies":{}}"#, GetCookieHeaderParams.init), field: "siteForCookies")
    }

    @Test func handleSetCookie() throws {
        let text = #"{"url":"http://192.0.2.1/","host":"a.example","setCookie":["a=1"]}"#
        let p = try HandleSetCookieParams(params(text))
        #expect(p == HandleSetCookieParams(url: "http://192.0.2.1/", host: "a.example", setCookie: ["a=1"]))
        #expect(try HandleSetCookieParams(Params(p.json)) == p)
        expectInvalidParams(rejection(#"{"url":"u"}"#, HandleSetCookieParams.init), field: "setCookie")
        expectInvalidParams(rejection(#"{"setCookie":[]}"#, HandleSetCookieParams.init), field: "url")
        expectInvalidParams(
            rejection(#"{"url":"u","setCookie":[true]}"#, HandleSetCookieParams.init), field: "setCookie[0]")
    }
}

/// deleteCookies: exactly one of `url`, `domain` or `all: true`; optional `name`.
struct DeleteCookiesParamsTests {
    @Test(arguments: [
        (#"{"url":"https://a.example/"}"#, DeleteCookiesParams.Target.url("https://a.example/", host: nil)),
        (#"{"url":"http://192.0.2.1/","host":"a.example"}"#, .url("http://192.0.2.1/", host: "a.example")),
        (#"{"domain":"example.com"}"#, .domain("example.com")),
        (#"{"all":true}"#, .all),
        (#"{"url":"u","all":false}"#, .url("u", host: nil)),
        (#"{"domain":"d","all":false}"#, .domain("d")),
        (#"{"url":"u","domain":null}"#, .url("u", host: nil)),
        (#"{"url":null,"all":true}"#, .all),
    ])
    func exactlyOneTarget(_ text: String, _ target: DeleteCookiesParams.Target) throws {
        #expect(try DeleteCookiesParams(params(text)).target == target)
    }

    @Test func nameRestrictsAnyTarget() throws {
        let allNamed = DeleteCookiesParams(target: .all, name: "sid")
        #expect(try DeleteCookiesParams(params(#"{"all":true,"name":"sid"}"#)) == allNamed)
        #expect(try DeleteCookiesParams(params(#"{"domain":"d","name":"x"}"#)).name == "x")
    }

    @Test(arguments: [
        "{}", #"{"all":false}"#, #"{"name":"sid"}"#, #"{"url":null,"domain":null,"all":null}"#,
        #"{"host":"a.example"}"#,
    ])
    func noTargetIsInvalid(_ text: String) {
        let error = rejection(text, DeleteCookiesParams.init)
        #expect(error?.code == .invalidParams)
        let field = error?.data["field"]?.stringValue ?? ""
        #expect(["url", "domain", "all"].contains(field), "\(String(describing: error))")
    }

    @Test(arguments: [
        #"{"url":"u","domain":"d"}"#, #"{"domain":"d","all":true}"#, #"{"url":"u","domain":"d","all":true}"#,
        #"{"url":"u","domain":"d","all":false}"#,
    ])
    func moreThanOneTargetIsInvalid(_ text: String) {
        let error = rejection(text, DeleteCookiesParams.init)
        #expect(error?.code == .invalidParams)
        let field = error?.data["field"]?.stringValue ?? ""
        #expect(["url", "domain", "all"].contains(field), "\(String(describing: error))")
        #expect(text.contains("\"\(field)\""), "the field named is one the caller sent")
    }

    /// `data.field` names the offending member; for url + all it must not name `domain`, which was not sent.
    @Test
    func urlAndAllNamesAMemberThatWasSent() {
        let error = rejection(#"{"url":"u","all":true}"#, DeleteCookiesParams.init)
        #expect(error?.code == .invalidParams)
        let field = error?.data["field"]?.stringValue ?? ""
        #expect(["url", "all"].contains(field), "\(String(describing: error))")
    }

    @Test func wrongTypesNameTheirField() {
        expectInvalidParams(rejection(#"{"all":"yes"}"#, DeleteCookiesParams.init), field: "all")
        expectInvalidParams(rejection(#"{"url":1}"#, DeleteCookiesParams.init), field: "url")
        expectInvalidParams(rejection(#"{"all":true,"name":2}"#, DeleteCookiesParams.init), field: "name")
    }

    @Test(arguments: [
        DeleteCookiesParams(target: .url("u", host: nil)),
        DeleteCookiesParams(target: .url("u", host: "h"), name: "n"),
        DeleteCookiesParams(target: .domain("d")),
        DeleteCookiesParams(target: .all, name: "n"),
    ])
    func roundTripsThroughItsJSON(_ p: DeleteCookiesParams) throws {
        #expect(try DeleteCookiesParams(Params(p.json)) == p)
    }
}
