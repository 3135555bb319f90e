import CCurl
import HTTPDNSSystem
import HTTPDNSURL

/// A blocking HTTP client: plain `http://` requests without a proxy are served here
/// (`PlainHTTPClient`), everything else over one libcurl easy handle.
///
/// Not thread-safe: each worker thread owns one, and because it lives across requests, connections
/// (and libcurl's TLS sessions) to the same upstream are reused. libcurl is loaded by the first
/// request that needs it (`LibCurl`), so a daemon whose upstreams are all plain HTTP never maps its
/// TLS stack; when it cannot be loaded, every such request fails with `.unavailable`.
public final class HTTPClient {
    /// Debian's hashed CA directory (what libcurl trusts by default besides its bundle).
    static let systemCertificateDirectory = "/etc/ssl/certs"

    /// The plain-HTTP half, with its idle connection.
    private let plain = PlainHTTPClient()
    /// libcurl and the easy handle, from the first request that needs them on.
    private var easy: (curl: LibCurl, handle: UnsafeMutableRawPointer)?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Loads nothing: libcurl is opened by the first request that needs it.
    public init() {
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        if let easy { easy.curl.functions.pointee.curl_easy_cleanup(easy.handle) }
        errorBuffer.deallocate()
    }

    /// libcurl and this client's easy handle, made on first use.
    private func easyHandle() throws(DynamicLibraryError) -> (curl: LibCurl, handle: UnsafeMutableRawPointer) {
        if let easy { return easy }
        let curl = try LibCurl.shared()
        guard let handle = curl.functions.pointee.curl_easy_init() else {
            fatalError("curl_easy_init failed: out of memory")
        }
        easy = (curl, handle)
        return (curl, handle)
    }

    /// `url` addressed to `tlsName` (so that SNI and the certificate check use it) and the
    /// `CURLOPT_CONNECT_TO` entry that still sends it to the URL's own host and port, for an https
    /// URL whose host is another; the URL unchanged otherwise. Parsed by the product's URL parser
    /// (ASCII hosts); nil when it does not parse or is ambiguous.
    static func pinning(_ url: String, to tlsName: String) -> (url: String, connectTo: String?)? {
        guard let target = HTTPURL(url), target.agreesWithRFC3986(url) else { return nil }
        let name = tlsName.lowercased()
        guard target.scheme == .https, target.host.name != name else { return (url, nil) }
        var pinned = target
        pinned.host = .domain(name)
        let port = target.effectivePort
        return (pinned.description, "\(name):\(port):\(target.host):\(port)")
    }

    /// Sends `request` and waits for the whole response (or the deadline).
    public func perform(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPError> {
        if let target = PlainHTTPTarget(request) { return plain.perform(request, to: target) }
        return performWithLibcurl(request)
    }

    private func performWithLibcurl(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPError> {
        let curl: LibCurl
        let handle: UnsafeMutableRawPointer
        do {
            (curl, handle) = try easyHandle()
        } catch {
            return .failure(HTTPError(.unavailable, error.description))
        }
        let f = curl.functions
        // Reset drops the previous request's options but keeps the connection cache.
        f.pointee.curl_easy_reset(handle)
        errorBuffer[0] = 0
        let sink = ResponseSink(maxBodyBytes: request.maxBodyBytes)
        var headerList: UnsafeMutablePointer<curl_slist>?
        var connectTo: UnsafeMutablePointer<curl_slist>?
        defer {
            f.pointee.curl_slist_free_all(headerList)
            f.pointee.curl_slist_free_all(connectTo)
        }

        var url = request.url
        if let tlsName = request.tlsName, !tlsName.isEmpty {
            guard let pinned = Self.pinning(url, to: tlsName) else {
                return .failure(HTTPError(.invalidRequest, "unparsable URL"))
            }
            url = pinned.url
            if let entry = pinned.connectTo { connectTo = f.pointee.curl_slist_append(nil, entry) }
        }
        for header in request.headers {
            headerList = f.pointee.curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        if request.method == .post {
            // No "Expect: 100-continue" round trip for a small body.
            headerList = f.pointee.curl_slist_append(headerList, "Expect:")
        }

        let userdata = Unmanaged.passUnretained(sink).toOpaque()
        var status = CURLE_OK
        func set(_ result: CURLcode) { if status == CURLE_OK { status = result } }
        set(ccurl_setopt_pointer(f, handle, CURLOPT_ERRORBUFFER, errorBuffer))
        set(ccurl_setopt_string(f, handle, CURLOPT_URL, url))
        set(ccurl_setopt_string(f, handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        // Threads: no SIGALRM-based DNS timeouts, which are not thread-safe.
        set(ccurl_setopt_long(f, handle, CURLOPT_NOSIGNAL, 1))
        set(ccurl_setopt_long(f, handle, CURLOPT_TIMEOUT_MS, request.timeoutMs))
        set(ccurl_setopt_long(f, handle, CURLOPT_CONNECTTIMEOUT_MS, request.timeoutMs))
        set(ccurl_setopt_long(f, handle, CURLOPT_FOLLOWLOCATION, 0))
        // An empty proxy disables http_proxy/https_proxy from the environment.
        set(ccurl_setopt_string(f, handle, CURLOPT_PROXY, request.proxy ?? ""))
        set(ccurl_setopt_long(f, handle, CURLOPT_MAXFILESIZE, request.maxBodyBytes))
        if let caFile = request.caFile {
            // CAFile= adds to the system CAs: the hashed system directory stays trusted beside it.
            set(ccurl_setopt_string(f, handle, CURLOPT_CAINFO, caFile))
            set(ccurl_setopt_string(f, handle, CURLOPT_CAPATH, Self.systemCertificateDirectory))
        }
        if let connectTo { set(ccurl_setopt_slist(f, handle, CURLOPT_CONNECT_TO, connectTo)) }
        if let headerList { set(ccurl_setopt_slist(f, handle, CURLOPT_HTTPHEADER, headerList)) }
        switch request.method {
        case .get:
            set(ccurl_setopt_long(f, handle, CURLOPT_HTTPGET, 1))
        case .post:
            set(ccurl_setopt_long(f, handle, CURLOPT_POST, 1))
            set(ccurl_setopt_long(f, handle, CURLOPT_POSTFIELDSIZE, request.body.count))
            // COPYPOSTFIELDS copies the bytes, so the Swift array need not outlive this call.
            if request.body.isEmpty {
                set(ccurl_setopt_string(f, handle, CURLOPT_COPYPOSTFIELDS, ""))
            } else {
                set(
                    request.body.withUnsafeBytes {
                        ccurl_setopt_pointer(
                            f, handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress))
                    })
            }
        }
        set(ccurl_setopt_callback(f, handle, CURLOPT_WRITEFUNCTION, writeCallback))
        set(ccurl_setopt_pointer(f, handle, CURLOPT_WRITEDATA, userdata))
        set(ccurl_setopt_callback(f, handle, CURLOPT_HEADERFUNCTION, headerCallback))
        set(ccurl_setopt_pointer(f, handle, CURLOPT_HEADERDATA, userdata))
        guard status == CURLE_OK else { return .failure(HTTPError(.invalidRequest, message(for: f, status))) }

        let result = withExtendedLifetime(sink) { f.pointee.curl_easy_perform(handle) }
        guard result == CURLE_OK else {
            if sink.exceeded || result == CURLE_FILESIZE_EXCEEDED {
                return .failure(HTTPError(.bodyTooLarge, "over \(request.maxBodyBytes) bytes"))
            }
            if result == CURLE_OPERATION_TIMEDOUT {
                return .failure(HTTPError(.timeout, message(for: f, result)))
            }
            if result == CURLE_URL_MALFORMAT || result == CURLE_UNSUPPORTED_PROTOCOL {
                return .failure(HTTPError(.invalidRequest, message(for: f, result)))
            }
            return .failure(HTTPError(.transport, message(for: f, result)))
        }
        var code = 0
        var totalTime = 0.0
        _ = ccurl_getinfo_long(f, handle, CURLINFO_RESPONSE_CODE, &code)
        _ = ccurl_getinfo_double(f, handle, CURLINFO_TOTAL_TIME, &totalTime)
        return .success(HTTPResponse(status: code, headers: sink.headers, body: sink.body, totalTime: totalTime))
    }

    /// libcurl's detailed message when it wrote one, else the generic text for the code.
    private func message(for f: UnsafePointer<ccurl_functions>, _ code: CURLcode) -> String {
        if errorBuffer[0] != 0 { return String(cString: errorBuffer) }
        guard let text = f.pointee.curl_easy_strerror(code) else { return "libcurl error \(code.rawValue)" }
        return String(cString: text)
    }
}

@available(*, unavailable)
extension HTTPClient: Sendable {}

/// Collects one response; reached from libcurl's callbacks through the userdata pointer.
private final class ResponseSink {
    let maxBodyBytes: Int
    var body: [UInt8] = []
    var headers: [HTTPHeader] = []
    var exceeded = false

    init(maxBodyBytes: Int) { self.maxBodyBytes = maxBodyBytes }

    /// One raw header line, CRLF included. A status line starts a new response (after a 1xx or an
    /// auth round), so only the final response's headers are kept.
    func addHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        var line = Array(bytes)
        while let last = line.last, last == 0x0d || last == 0x0a { line.removeLast() }
        if line.starts(with: Array("HTTP/".utf8)) {
            headers.removeAll()
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
        headers.append(HTTPHeader(name, String(decoding: value, as: UTF8.self)))
    }
}

private let writeCallback: ccurl_data_callback = { data, size, count, userdata in
    guard let userdata else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard sink.body.count + length <= sink.maxBodyBytes else {
        sink.exceeded = true
        return 0  // anything but `length` makes libcurl abort with CURLE_WRITE_ERROR
    }
    if let data, length > 0 { sink.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length)) }
    return length
}

private let headerCallback: ccurl_data_callback = { data, size, count, userdata in
    guard let userdata else { return 0 }
    let sink = Unmanaged<ResponseSink>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    if let data { sink.addHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) }
    return length
}
