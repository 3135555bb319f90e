import Glibc
import HTTPDNSClient
import HTTPDNSProtocol

// The C ABI of include/httpdns.h. Each function here has a declaration there, and
// Tests/check_exports.sh checks that the two lists agree. Memory returned to C is always
// malloc'd (strdup), never Swift-owned. No input may trap: every pointer, count and string is
// checked, and a failure is a negative code (the host process must never die of its arguments).

/// The most Set-Cookie values one `httpdns_handle_set_cookie` takes (`HTTPDNS_MAX_SET_COOKIE`).
let maxSetCookieCount = 1024

@_cdecl("httpdns_open")
public func httpdns_open(_ socketPath: UnsafePointer<CChar>?) -> OpaquePointer? {
    var path: String?
    if let socketPath {
        guard let value = String(validatingCString: socketPath) else {
            errno = EILSEQ
            return nil
        }
        path = value
    }
    return HandleRegistry.register(ClientHandle(socketPath: path))
}

@_cdecl("httpdns_close")
public func httpdns_close(_ client: OpaquePointer?) {
    HandleRegistry.remove(client)
}

@_cdecl("httpdns_call")
public func httpdns_call(
    _ client: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ paramsJSON: UnsafePointer<CChar>?
) -> UnsafeMutablePointer<CChar>? {
    guard let handle = HandleRegistry.handle(client) else { return nil }
    return handle.call(onFailure: { _ in nil }) { connection throws(CallFailure) in
        let method = try requiredText(method, "method")
        var params = JSONObject()
        if let text = try text(paramsJSON, "params_json") {
            let json: JSON
            do { json = try JSONParser.parse(text) } catch let error as JSONParseError {
                throw CallFailure(-EINVAL, "params_json is not JSON: \(error.description)")
            } catch {
                throw CallFailure(-EINVAL, "params_json is not JSON")
            }
            guard let object = json.objectValue else {
                throw CallFailure(-EINVAL, "params_json must be a JSON object, not \(json.typeName)")
            }
            params = object
        }
        return try copy(daemon { () throws(ClientError) in try connection.call(method, params: params) }.encodedString)
    }
}

@_cdecl("httpdns_resolve")
public func httpdns_resolve(
    _ client: OpaquePointer?, _ host: UnsafePointer<CChar>?,
    _ addrs: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?,
    _ count: UnsafeMutablePointer<Int>?
) -> Int32 {
    addrs?.pointee = nil
    count?.pointee = 0
    guard let handle = HandleRegistry.handle(client) else { return -EINVAL }
    return handle.call(onFailure: { $0.code }) { connection throws(CallFailure) in
        let host = try requiredText(host, "host")
        guard let addrs, let count else { throw CallFailure(-EINVAL, "addrs and count must not be NULL") }
        let result = try daemon { () throws(ClientError) in try connection.resolve(host: host) }
        let addresses = result.ipv4 + result.ipv6
        guard !addresses.isEmpty else { return 0 }
        guard let array = CStringArray.make(addresses) else { throw CallFailure(-ENOMEM, "out of memory") }
        addrs.pointee = array
        count.pointee = addresses.count
        return 0
    }
}

@_cdecl("httpdns_get_cookie_header")
public func httpdns_get_cookie_header(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?
) -> UnsafeMutablePointer<CChar>? {
    guard let handle = HandleRegistry.handle(client) else { return nil }
    return handle.call(onFailure: { _ in nil }) { connection throws(CallFailure) in
        let url = try requiredText(url, "url")
        let host = try text(host, "host")
        return try copy(daemon { () throws(ClientError) in try connection.cookieHeader(url: url, host: host) }.header)
    }
}

@_cdecl("httpdns_handle_set_cookie")
public func httpdns_handle_set_cookie(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?,
    _ setCookie: UnsafePointer<UnsafePointer<CChar>?>?, _ n: Int
) -> Int32 {
    guard let handle = HandleRegistry.handle(client) else { return -EINVAL }
    return handle.call(onFailure: { $0.code }) { connection throws(CallFailure) in
        let url = try requiredText(url, "url")
        let host = try text(host, "host")
        // size_t arrives as Int: a "negative" count is a huge one.
        let count = UInt(bitPattern: n)
        guard count <= UInt(maxSetCookieCount) else {
            throw CallFailure(-E2BIG, "n is \(count), more than \(maxSetCookieCount) Set-Cookie values")
        }
        guard count == 0 || setCookie != nil else { throw CallFailure(-EINVAL, "set_cookie is NULL") }
        var values: [String] = []
        values.reserveCapacity(Int(count))
        for i in 0..<Int(count) {
            guard let value = try text(setCookie![i], "set_cookie[\(i)]") else {
                throw CallFailure(-EINVAL, "set_cookie[\(i)] is NULL")
            }
            values.append(value)
        }
        _ = try daemon { () throws(ClientError) in
            try connection.handleSetCookie(url: url, host: host, setCookie: values)
        }
        return 0
    }
}

@_cdecl("httpdns_delete_cookies")
public func httpdns_delete_cookies(_ client: OpaquePointer?, _ url: UnsafePointer<CChar>?) -> Int {
    guard let handle = HandleRegistry.handle(client) else { return Int(-EINVAL) }
    return handle.call(onFailure: { Int($0.code) }) { connection throws(CallFailure) in
        let url = try requiredText(url, "url")
        return try daemon { () throws(ClientError) in
            try connection.deleteCookies(DeleteCookiesParams(target: .url(url, host: nil)))
        }
    }
}

@_cdecl("httpdns_prepare_request")
public func httpdns_prepare_request(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ resolveEntry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ cookieHeader: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    resolveEntry?.pointee = nil
    cookieHeader?.pointee = nil
    guard let handle = HandleRegistry.handle(client) else { return -EINVAL }
    return handle.call(onFailure: { $0.code }) { connection throws(CallFailure) in
        let target = try parsedTarget(requiredText(url, "url"))
        let entry = try resolveEntry.map { _ throws(CallFailure) in
            try daemon { () throws(ClientError) in try connection.resolveEntry(for: target) }
        }
        let header = try cookieHeader.map { _ throws(CallFailure) in
            try daemon { () throws(ClientError) in try connection.cookieHeader(url: target.url) }.header
        }
        // Copied only once both calls succeeded, so a failure leaves nothing to free.
        resolveEntry?.pointee = try entry.flatMap { $0 }.map(copy)
        guard let header else { return 0 }
        guard let headerCopy = strdup(header) else {
            free(resolveEntry?.pointee)
            resolveEntry?.pointee = nil
            throw CallFailure(-ENOMEM, "out of memory")
        }
        cookieHeader?.pointee = headerCopy
        return 0
    }
}

/// `url` as the product's URL parser reads it, or the C failure: -EINVAL for a URL that is not
/// http(s), -ENOTUNIQ for one whose host curl would read otherwise.
func parsedTarget(_ text: String) throws(CallFailure) -> HTTPTarget {
    switch HTTPTarget.parse(text) {
    case .success(let target): return target
    case .failure(.notHTTP): throw CallFailure(-EINVAL, "url is not an http or https URL with a host: \(text)")
    case .failure(.ambiguous):
        throw CallFailure(-ENOTUNIQ, "url names its host ambiguously (curl would reach another host): \(text)")
    }
}

@_cdecl("httpdns_parse_url")
public func httpdns_parse_url(
    _ url: UnsafePointer<CChar>?, _ base: UnsafePointer<CChar>?,
    _ serialized: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ host: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    serialized?.pointee = nil
    host?.pointee = nil
    do throws(CallFailure) {
        let urlText = try requiredText(url, "url")
        let target: HTTPTarget
        if let baseText = try text(base, "base") {
            guard case .success(let baseTarget) = HTTPTarget.parse(baseText) else {
                throw CallFailure(-EINVAL, "base is not an unambiguous http or https URL")
            }
            switch baseTarget.redirect(to: urlText) {
            case .success(let next): target = next
            case .failure(.notHTTP): throw CallFailure(-EINVAL, "url is not an http or https URL")
            case .failure(.ambiguous): throw CallFailure(-ENOTUNIQ, "url names its host ambiguously")
            }
        } else {
            target = try parsedTarget(urlText)
        }
        let urlCopy = try serialized.map { _ throws(CallFailure) in try copy(target.url) }
        guard let host else {
            serialized?.pointee = urlCopy
            return 0
        }
        guard let hostCopy = strdup(target.host) else {
            free(urlCopy)
            throw CallFailure(-ENOMEM, "out of memory")
        }
        serialized?.pointee = urlCopy
        host.pointee = hostCopy
        return 0
    } catch {
        return error.code
    }
}

@_cdecl("httpdns_last_error")
public func httpdns_last_error(
    _ client: OpaquePointer?, _ message: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let handle = HandleRegistry.handle(client) else {
        message?.pointee = nil
        return -EINVAL
    }
    let outcome = handle.lastOutcome()
    message?.pointee = outcome.message ?? emptyCString
    return outcome.code
}

@_cdecl("httpdns_free")
public func httpdns_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

@_cdecl("httpdns_free_addrs")
public func httpdns_free_addrs(_ addrs: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ count: Int) {
    CStringArray.free(addrs, count: UInt(bitPattern: count))
}

@_cdecl("httpdns_version")
public func httpdns_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(ClientVersion.staticString.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// "" in static storage, for a thread that has made no call on the handle yet.
private var emptyCString: UnsafePointer<CChar> {
    UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

/// A daemon call, its failure as the C code and message.
func daemon<T>(_ body: () throws(ClientError) -> T) throws(CallFailure) -> T {
    do { return try body() } catch { throw CallFailure(error) }
}

/// A malloc'd copy of `text` for the caller.
func copy(_ text: String) throws(CallFailure) -> UnsafeMutablePointer<CChar> {
    guard let copy = strdup(text) else { throw CallFailure(-ENOMEM, "out of memory") }
    return copy
}

/// malloc'd arrays of malloc'd strings, the shape of `httpdns_resolve`'s `char **`, with a
/// NULL after the last string so that freeing never runs past the end whatever count it gets.
enum CStringArray {
    static func make(_ strings: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        let (slots, overflow) = (strings.count + 1).multipliedReportingOverflow(
            by: MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)
        guard !overflow, let raw = malloc(slots) else { return nil }
        let array = raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: strings.count + 1)
        array.initialize(repeating: nil, count: strings.count + 1)
        for (i, string) in strings.enumerated() {
            guard let copy = strdup(string) else {
                free(array, count: UInt(i))
                return nil
            }
            array[i] = copy
        }
        return array
    }

    static func free(_ array: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, count: UInt) {
        guard let array else { return }
        var i = 0
        while UInt(i) < count, let string = array[i] {
            Glibc.free(string)
            i += 1
        }
        Glibc.free(array)
    }
}
