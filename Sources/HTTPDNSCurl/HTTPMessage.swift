/// One header line, name and value as sent (names compare case-insensitively).
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request for `HTTPClient.perform`.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    /// A cap that keeps a broken or hostile upstream from filling memory; DNS answers are tiny.
    public static let defaultMaxBodyBytes = 1 << 20

    public var url: String
    public var method: Method
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// The whole request's deadline, connecting included (CURLOPT_TIMEOUT_MS and CONNECTTIMEOUT_MS).
    public var timeoutMs: Int
    /// A PEM bundle to trust instead of the system CAs (CURLOPT_CAINFO).
    public var caFile: String?
    /// For `https` URLs that name an IP: the host name the certificate carries. The request is sent to
    /// that name (SNI, Host and verification use it) but connects to the URL's address (CURLOPT_CONNECT_TO).
    public var tlsName: String?
    /// Responses with a larger body fail with `.bodyTooLarge`.
    public var maxBodyBytes: Int
    /// An explicit proxy URL; nil means none (proxy environment variables are ignored on purpose).
    public var proxy: String?

    public init(
        url: String, method: Method = .get, headers: [HTTPHeader] = [], body: [UInt8] = [], timeoutMs: Int = 2000,
        caFile: String? = nil, tlsName: String? = nil, maxBodyBytes: Int = HTTPRequest.defaultMaxBodyBytes,
        proxy: String? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.caFile = caFile
        self.tlsName = tlsName
        self.maxBodyBytes = maxBodyBytes
        self.proxy = proxy
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Every header line of the final response, in order; repeated headers (Set-Cookie) stay separate.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Seconds from start to the last byte (CURLINFO_TOTAL_TIME).
    public var totalTime: Double

    public init(status: Int, headers: [HTTPHeader], body: [UInt8], totalTime: Double) {
        self.status = status
        self.headers = headers
        self.body = body
        self.totalTime = totalTime
    }

    /// The values of every header called `name` (case-insensitive), in order.
    public func values(of name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }
}

public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case timeout
        /// Connection, TLS or protocol failure.
        case transport
        case bodyTooLarge
        /// The request itself could not be used (a bad URL, an option libcurl refused).
        case invalidRequest
        /// libcurl could not be loaded (the detail says why).
        case unavailable
    }

    public let code: Code
    /// libcurl's message; it names hosts and ports but never the URL's query.
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String {
        switch code {
        case .timeout: return "timed out: \(detail)"
        case .transport: return detail
        case .bodyTooLarge: return "response body too large: \(detail)"
        case .invalidRequest: return "invalid request: \(detail)"
        case .unavailable: return detail
        }
    }
}
