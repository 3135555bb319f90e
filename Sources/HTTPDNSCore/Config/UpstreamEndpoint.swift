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

    public init(kind: Kind, url: String?, name: String) {
        self.kind = kind
        self.url = url
        self.name = name
    }

    /// What runs with no configuration at all: the system resolver.
    public static let system = UpstreamEndpoint(kind: .system, url: nil, name: "system")
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
