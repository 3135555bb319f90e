/// The one place an endpoint's kind and form pick its descriptor: everything else asks the
/// descriptor, never the kind.
extension UpstreamEndpoint {
    public var descriptor: any UpstreamKindDescriptor {
        switch kind {
        case .alibaba:
            switch alibabaAPI {
            case .v1: return AlibabaV1Kind()
            case .v2: return AlibabaV2Kind(alibabaV2Mode)
            }
        case .tencent:
            switch tencentForm {
            case .free: return TencentFreeKind()
            case .des: return TencentPaidKind(.des)
            case .aes: return TencentPaidKind(.aes)
            case .token: return TencentPaidKind(.token)
            }
        case .doh: return DoHWireKind()
        case .dohJSON: return DoHJSONKind()
        case .system: return SystemKind()
        }
    }

    /// Whether prefetch asks this upstream for several names in one request.
    public var batchesPrefetch: Bool { descriptor.batchesPrefetch }
}

extension UpstreamEndpoint.Kind {
    /// The descriptor of the kind's form before the file's settings are applied: what every
    /// form of the kind shares (`needsURL`, `isBilled`, `serviceAddresses`).
    public var descriptor: any UpstreamKindDescriptor {
        UpstreamEndpoint(kind: self, url: nil, name: rawValue).descriptor
    }

    /// Whether the kind is an HTTP service and so needs a URL.
    public var needsURL: Bool { descriptor.needsURL }

    /// Whether the service bills per query and answers only the names of its console (an
    /// empty answer for any other is final): the HTTPDNS services.
    public var isBilled: Bool { descriptor.isBilled }
}
