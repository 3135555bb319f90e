import HTTPDNSProtocol
import HTTPDNSURL

/// Alibaba's scheduler, which hands out the current service addresses of an account:
/// `GET /{account}/ss?region=R&platform=linux` on a boot address, answered
/// `{"service_ip":["..."],"service_ipv6":["..."]}`.
///
/// An answer decides where every name of the machine is sent, so it is taken only whole and only
/// as IP literals: a body past `maxBodyBytes`, a list past `maxAddresses`, an element that is not
/// an address of its list's family, or an address no service can have (unspecified, multicast,
/// broadcast) refuses the whole answer.
public enum AlibabaScheduler {
    /// The longest answer read: a list of `maxAddresses` IPv6 addresses per family is under 3 KiB.
    public static let maxBodyBytes = 16 * 1024
    /// Addresses taken per family; more is not an answer of the service's.
    public static let maxAddresses = 32

    /// The boot addresses Alibaba's SDKs build in, per region (C SDK `hdns_config.c`, iOS
    /// `HttpdnsRegionConfigLoader.m`): where the scheduler is asked until `AlibabaBootAddresses=`
    /// replaces them.
    public static let builtInBootAddresses: [String: [String]] = [
        "cn": [
            "203.107.1.1", "203.107.1.97", "203.107.1.100", "203.119.238.240", "106.11.25.239", "59.82.99.47",
            "2401:b180:7001::31d", "2408:4003:1f40::30a", "2401:b180:2000:20::10", "2401:b180:2000:30::1c",
        ],
        "hk": ["47.56.234.194", "47.56.119.115", "240b:4000:f10::178", "240b:4000:f10::188"],
        "sg": ["161.117.200.122", "47.74.222.190", "240b:4000:f10::178", "240b:4000:f10::188"],
        "us": ["47.246.131.175", "47.246.131.141", "2404:2280:4000::2bb", "2404:2280:4000::23e"],
        "de": ["47.89.80.182", "47.246.146.77", "2404:2280:3000::176", "2404:2280:3000::188"],
    ]

    /// The regions `AlibabaRegion=` takes, in a stable order.
    public static let regions = ["cn", "hk", "sg", "us", "de"]

    /// The scheduler request for the account of `baseURL` (the upstream's URL, whose host is
    /// replaced by `address`). With a secret it is signed as the SDKs sign it:
    /// `n` a random nonce, `t` now, `s = md5(n-secret-t)`.
    public static func request(
        baseURL: String, address: String, region: String, secret: String?, now: Int64, nonce: String
    ) -> UpstreamHTTPRequest {
        let base = ServiceURL.replacingHost(of: URLQuery.trimmedBase(baseURL), with: address) ?? baseURL
        var url = "\(base)/ss?region=\(URLQuery.encode(region))&platform=linux"
        if let secret, !secret.isEmpty {
            let signature = MD5.hexDigest(nonce + "-" + secret + "-" + String(now))
            url += "&n=\(URLQuery.encode(nonce))&t=\(now)&s=\(signature)"
        }
        return UpstreamHTTPRequest(url: url)
    }

    /// Asks the scheduler `fetch` names over `transport` (`nonce` signs it when there is a
    /// secret); the answer is read up to `maxBodyBytes` and validated whole.
    public static func ask(
        _ fetch: ServiceAddressFetch, secret: String?, nonce: String, over transport: any UpstreamExchangeTransport
    ) -> Result<[IPAddress], UpstreamError> {
        let request = request(
            baseURL: fetch.baseURL, address: fetch.address, region: fetch.region, secret: secret,
            now: transport.wallSeconds(), nonce: nonce)
        return transport.fetch(request, timeoutMs: fetch.timeoutMs, maxBodyBytes: maxBodyBytes).flatMap {
            parse(status: $0.status, body: $0.body)
        }
    }

    /// The service addresses of an answer, IPv4 first, each once; or why the answer is refused.
    public static func parse(status: Int, body: [UInt8]) -> Result<[IPAddress], UpstreamError> {
        guard body.count <= maxBodyBytes else { return .failure(UpstreamError(.responseTooLarge)) }
        let json = try? JSONParser.parse(body)
        if let code = json?["code"]?.stringValue, code.lowercased() != "success" {
            return .failure(UpstreamError(.serviceError(code: code)))
        }
        guard (200..<300).contains(status) else { return .failure(UpstreamError(.httpStatus(status))) }
        guard let json, json.objectValue != nil else {
            return .failure(UpstreamError(.malformed("scheduler answer is not a JSON object")))
        }
        var addresses: [IPAddress] = []
        for (key, family) in [("service_ip", IPFamily.ipv4), ("service_ipv6", IPFamily.ipv6)] {
            guard let value = json[key], !value.isNull else { continue }
            guard let list = value.arrayValue else {
                return .failure(UpstreamError(.malformed("\"\(key)\" is a \(value.typeName), not an array")))
            }
            guard list.count <= maxAddresses else {
                return .failure(UpstreamError(.malformed("\"\(key)\" lists more than \(maxAddresses) addresses")))
            }
            for item in list {
                guard let text = item.stringValue, let address = IPAddress(text), address.family == family,
                    ServiceAddressRules.isUsable(address)
                else {
                    return .failure(
                        UpstreamError(.malformed("\"\(key)\" holds something that is not a service address")))
                }
                if !addresses.contains(address) { addresses.append(address) }
            }
        }
        guard !addresses.isEmpty else {
            return .failure(UpstreamError(.malformed("scheduler answer lists no address")))
        }
        return .success(addresses)
    }
}

/// Which addresses may stand for a service.
public enum ServiceAddressRules {
    /// Not unspecified, multicast or the IPv4 broadcast address: nothing answers HTTP there.
    public static func isUsable(_ address: IPAddress) -> Bool {
        switch address.family {
        case .ipv4:
            return address.bytes != [0, 0, 0, 0] && address.bytes != [255, 255, 255, 255] && address.bytes[0] < 224
        case .ipv6:
            return address.bytes != [UInt8](repeating: 0, count: 16) && address.bytes[0] != 0xff
        }
    }
}

/// Putting a service address in an upstream's URL, through the URL Standard parser (`HTTPURL`).
public enum ServiceURL {
    /// `url` (an absolute http(s) URL, as the configuration checks it) with its host replaced by
    /// `address` (bracketed when IPv6); the path and query stay, and the port unless it is the
    /// scheme's default. Nil when `url` or `address` cannot be read, or the URL has user information.
    public static func replacingHost(of url: String, with address: String) -> String? {
        guard var parsed = HTTPURL(url), parsed.username.isEmpty, parsed.password.isEmpty,
            let ip = IPAddress(address)
        else { return nil }
        parsed.host = HTTPURL.Host(ip)
        var replaced = parsed.description
        // The serializer writes an empty path as "/"; callers append paths to a URL given without one.
        if parsed.path == "/", parsed.query == nil, parsed.fragment == nil, !url.hasSuffix("/") {
            replaced.removeLast()
        }
        return replaced
    }

    /// The URL's host: an IP literal in canonical form (without an IPv6 literal's brackets), a
    /// name lowercased.
    public static func host(of url: String) -> String? {
        guard let host = HTTPURL(url)?.host.name else { return nil }
        return IPAddress(host)?.description ?? host
    }
}

extension HTTPURL.Host {
    /// An address as a URL's host.
    init(_ address: IPAddress) {
        let bytes = address.bytes
        switch address.family {
        case .ipv4:
            self = .ipv4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case .ipv6:
            let pieces = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            self = .ipv6(HTTPURL.IPv6Address(pieces: pieces))
        }
    }
}
