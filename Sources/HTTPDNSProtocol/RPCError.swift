/// A JSON-RPC 2.0 error object as httpdnsd-rpc(7) defines it: a code, a short human sentence, and
/// `data` that always carries a stable `name` scripts can match.
public struct RPCError: Error, Sendable, Equatable {
    /// The error codes of the contract. Every failure maps onto exactly one of these.
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// -32700: the line is not JSON.
        public static let parseError = Code(rawValue: -32700)
        /// -32600: JSON, but not a valid request object (also: line over the size cap).
        public static let invalidRequest = Code(rawValue: -32600)
        /// -32601: no such method.
        public static let methodNotFound = Code(rawValue: -32601)
        /// -32602: a parameter is missing or malformed; `data.field` names it.
        public static let invalidParams = Code(rawValue: -32602)
        /// -32603: the daemon failed (storage, bug); the request may be retried.
        public static let internalError = Code(rawValue: -32603)
        /// -32001: the upstreams answered that the name has no address.
        public static let hostNotFound = Code(rawValue: -32001)
        /// -32002: every upstream failed and no cached answer may be served.
        public static let resolutionUnavailable = Code(rawValue: -32002)
        /// -32003: a limit was hit (connections, requests in flight, cookies in one request...).
        public static let limitExceeded = Code(rawValue: -32003)
        /// -32004: the caller may not do this.
        public static let permissionDenied = Code(rawValue: -32004)
    }

    public var code: Code
    public var message: String
    /// Always an object with at least `name`.
    public var data: JSONObject

    public init(code: Code, name: String, message: String, details: JSONObject = JSONObject()) {
        self.code = code
        self.message = message
        var data = JSONObject()
        data.append("name", .string(name))
        for member in details where member.key != "name" { data.append(member.key, member.value) }
        self.data = data
    }

    /// The stable name in `data.name`.
    public var name: String { data["name"]?.stringValue ?? "" }

    public var json: JSON {
        .object(["code": .int(code.rawValue), "message": .string(message), "data": .object(data)])
    }

    /// Rebuilds an error object received from a daemon (client side).
    public init?(json: JSON) {
        guard let object = json.objectValue, let code = object["code"]?.numberValue?.int64Value,
            let message = object["message"]?.stringValue
        else { return nil }
        self.code = Code(rawValue: Int(code))
        self.message = message
        self.data = object["data"]?.objectValue ?? JSONObject()
    }
}

extension RPCError {
    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: .parseError, name: "ParseError", message: "Parse error: \(detail)")
    }

    public static func invalidRequest(_ detail: String) -> RPCError {
        RPCError(code: .invalidRequest, name: "InvalidRequest", message: "Invalid request: \(detail)")
    }

    public static func lineTooLong(limit: Int) -> RPCError {
        RPCError(
            code: .invalidRequest, name: "RequestTooLarge",
            message: "Invalid request: line longer than \(limit) bytes",
            details: ["limit": .int(limit)])
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(
            code: .methodNotFound, name: "MethodNotFound", message: "Method not found: \(method)",
            details: ["method": .string(method)])
    }

    /// -32602 naming the offending member of `params`.
    public static func invalidParams(field: String, _ reason: String) -> RPCError {
        RPCError(
            code: .invalidParams, name: "InvalidParams", message: "Invalid params: \(field): \(reason)",
            details: ["field": .string(field)])
    }

    /// A caller's value as an error message shows it: quoted, and cut after its first 64
    /// characters (a megabyte of an invalid value came back whole, a megabyte to encode).
    public static func quoted(_ value: String) -> String {
        let shown = value.unicodeScalars.prefix(64)
        let cut = shown.endIndex < value.unicodeScalars.endIndex
        return "\"" + String(String.UnicodeScalarView(shown)) + (cut ? "…" : "") + "\""
    }

    public static func internalError(_ detail: String) -> RPCError {
        RPCError(code: .internalError, name: "InternalError", message: "Internal error: \(detail)")
    }

    /// Why a name has no address: `data.reason` of a resolve's -32001.
    public enum NotFoundReason: String, Sendable {
        /// NODATA: the name exists, without an address of the families asked for.
        case noData = "no-data"
        /// NXDOMAIN: the name does not exist.
        case noSuchName = "no-such-name"
    }

    /// -32001 for `resolve`: the upstreams say `host` has no address of the families asked for.
    public static func hostNotFound(_ host: String, reason: NotFoundReason) -> RPCError {
        RPCError(
            code: .hostNotFound, name: "HostNotFound", message: "Host not found: \(host)",
            details: ["host": .string(host), "reason": .string(reason.rawValue)])
    }

    /// -32001 for `reverse`: this uid was handed `address` out for no host name.
    public static func addressNotFound(_ address: String) -> RPCError {
        RPCError(
            code: .hostNotFound, name: "HostNotFound", message: "No host name known for \(address)",
            details: ["address": .string(address)])
    }

    /// -32602 when an IP-literal URL maps to several of the caller's host names and no `host`
    /// says which: whose login a cookie is must not be guessed.
    public static func ambiguousAddress(_ address: String, candidates: [String]) -> RPCError {
        RPCError(
            code: .invalidParams, name: "InvalidParams",
            message: "Invalid params: host: \(address) was handed out for several host names; pass host",
            details: [
                "field": .string("host"), "reason": .string("ambiguous-address"), "address": .string(address),
                "candidates": .array(candidates.map(JSON.string)),
            ])
    }

    /// -32602 when a URL would reach another host under RFC 3986's reading (curl's) than under
    /// the WHATWG URL Standard's (a backslash, a percent-escape or a second `@` in the authority,
    /// an IPv4 number form): which site its cookies belong to must not depend on who reads it.
    public static func ambiguousURL(field: String) -> RPCError {
        RPCError(
            code: .invalidParams, name: "InvalidParams",
            message:
                "Invalid params: \(field): not written plainly: curl and the WHATWG URL Standard would reach different hosts",
            details: ["field": .string(field), "reason": .string("ambiguous-url")])
    }

    public static func resolutionUnavailable(_ host: String, reason: String) -> RPCError {
        RPCError(
            code: .resolutionUnavailable, name: "ResolutionUnavailable",
            message: "Resolution unavailable for \(host): \(reason)",
            details: ["host": .string(host), "reason": .string(reason)])
    }

    /// -32003 past a rate: `limit` a second, and the milliseconds until one more is allowed.
    public static func rateExceeded(_ what: String, limit: Int, retryAfterMs: Int) -> RPCError {
        RPCError(
            code: .limitExceeded, name: "LimitExceeded",
            message: "Limit exceeded: \(what) (at most \(limit) a second; retry in \(retryAfterMs) ms)",
            details: ["limit": .int(limit), "what": .string(what), "retryAfterMs": .int(retryAfterMs)])
    }

    public static func limitExceeded(_ what: String, limit: Int) -> RPCError {
        RPCError(
            code: .limitExceeded, name: "LimitExceeded", message: "Limit exceeded: \(what) (at most \(limit))",
            details: ["limit": .int(limit), "what": .string(what)])
    }

    public static func permissionDenied(_ detail: String) -> RPCError {
        RPCError(code: .permissionDenied, name: "PermissionDenied", message: "Permission denied: \(detail)")
    }
}
