/// One `Upstream=KIND URL` line: what to ask, and the name `status` and `resolve` report it by.
/// How it is asked is its `descriptor`'s.
public struct UpstreamEndpoint: Sendable, Equatable {
    /// The upstream protocols (httpdnsd.conf(5), `Upstream=`).
    public enum Kind: String, Sendable, CaseIterable {
        /// Alibaba Cloud HTTPDNS (`/{account}/d`, signed `sign_d` when a secret is set).
        case alibaba
        /// Tencent Cloud / DNSPod HTTPDNS (`/d?dn=`).
        case tencent
        /// RFC 8484 DNS over HTTPS (application/dns-message).
        case doh
        /// DNS over HTTPS with the application/dns-json answer shape.
        case dohJSON = "doh-json"
        /// The system resolver (getaddrinfo); takes no URL.
        case system
    }

    public var kind: Kind
    /// The base URL; nil exactly for `.system`.
    public var url: String?
    /// Unique among the configured upstreams: the kind, with `#2`, `#3`... for repeats.
    public var name: String
    /// How a `tencent` upstream is asked, decided from its URL and the Tencent account keys once
    /// the whole file is read; `.free` for every other kind.
    public var tencentForm = TencentForm.free
    /// Which API an `alibaba` upstream is asked in (`AlibabaAPI=`), set once the whole file is
    /// read; `.v1` for every other kind.
    public var alibabaAPI = AlibabaAPI.v1
    /// How a v2 `alibaba` upstream's queries are sent (`AlibabaAESKey=`, `AlibabaEncryption=`),
    /// set with `alibabaAPI`; `.plain` for every other.
    public var alibabaV2Mode = AlibabaV2Mode.plain
    /// `ClientIP=` and `SDNS=` for this upstream: what every query to it carries besides the name.
    public var parameters = UpstreamQueryParameters()

    public init(kind: Kind, url: String?, name: String) {
        self.kind = kind
        self.url = url
        self.name = name
    }

    /// What runs with no configuration at all: the system resolver.
    public static let system = UpstreamEndpoint(kind: .system, url: nil, name: "system")
}

/// What an HTTPDNS upstream is told besides the name, the same for every query to it: the
/// client address answers are scheduled for, and Alibaba's custom (SDNS) parameters. Answers
/// for one name always come through one route, so they stay cached by the name alone.
public struct UpstreamQueryParameters: Sendable, Equatable {
    /// `ClientIP=`: an IP literal, canonical; nil: the service uses the connection's source.
    public var clientIP: String?
    /// `SDNS=`: sent as `sdns-KEY=VALUE`, in the order written.
    public var sdns: [SDNSParameter] = []

    public init(clientIP: String? = nil, sdns: [SDNSParameter] = []) {
        self.clientIP = clientIP
        self.sdns = sdns
    }

    public var isEmpty: Bool { clientIP == nil && sdns.isEmpty }
}

/// One of Alibaba's SDNS parameters (`sdns-KEY=VALUE`).
public struct SDNSParameter: Sendable, Equatable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    /// The query parameter's name.
    public var name: String { "sdns-" + key }

    /// What the SDKs accept (Android's `ResolveHostHelper`): keys of letters, digits, `-` and
    /// `_`; values of those and `=`; all of them at most 1000 bytes as query text.
    public static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { isWordByte($0) }
    }

    public static func isValidValue(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy { isWordByte($0) || $0 == UInt8(ascii: "=") }
    }

    public static let maxQueryBytes = 1_000

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

/// A `Static=HOST IP [IP...]` line: a fixed answer, reported with source `static`.
public struct StaticAnswer: Sendable, Equatable {
    /// Lowercase, without a trailing dot.
    public var host: String
    /// IP literals as written (syntax checked); canonicalise with `IPAddress` at load time.
    public var addresses: [String]

    public init(host: String, addresses: [String]) {
        self.host = host
        self.addresses = addresses
    }
}
