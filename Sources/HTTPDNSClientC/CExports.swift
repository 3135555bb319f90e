import Glibc
import HTTPDNSClient
import HTTPDNSProtocol

// The C ABI of include/httpdns.h. Each function here has a declaration there, and
// Tests/check_exports.sh checks that the two lists agree. Memory returned to C is always
// malloc'd (strdup), never Swift-owned.

@_cdecl("httpdns_open")
public func httpdns_open(_ socketPath: UnsafePointer<CChar>?) -> OpaquePointer? {
    let handle = ClientHandle(socketPath: string(socketPath))
    return OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
}

@_cdecl("httpdns_close")
public func httpdns_close(_ client: OpaquePointer?) {
    guard let client else { return }
    Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer(client)).release()
}

@_cdecl("httpdns_call")
public func httpdns_call(
    _ client: OpaquePointer?, _ method: UnsafePointer<CChar>?, _ paramsJSON: UnsafePointer<CChar>?
) -> UnsafeMutablePointer<CChar>? {
    guard let handle = ClientHandle.from(client) else { return nil }
    guard let method = string(method) else {
        handle.failed(-EINVAL, "method is NULL")
        return nil
    }
    var params = JSONObject()
    if let text = string(paramsJSON) {
        let json: JSON
        do { json = try JSONParser.parse(text) } catch {
            handle.failed(-EINVAL, "params_json is not JSON: \(error.description)")
            return nil
        }
        guard let object = json.objectValue else {
            handle.failed(-EINVAL, "params_json must be a JSON object, not \(json.typeName)")
            return nil
        }
        params = object
    }
    do {
        let result = try handle.connection.call(method, params: params)
        return handle.returning(result.encodedString)
    } catch {
        handle.failed(error)
        return nil
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
    guard let handle = ClientHandle.from(client) else { return -EINVAL }
    guard let host = string(host), let addrs, let count else {
        return handle.failed(-EINVAL, "host, addrs and count must not be NULL")
    }
    let result: ResolveResult
    do { result = try handle.connection.resolve(host: host) } catch { return handle.failed(error) }
    let addresses = result.ipv4 + result.ipv6
    guard !addresses.isEmpty else {
        handle.succeeded()
        return 0
    }
    guard let array = CStringArray.make(addresses) else { return handle.failed(-ENOMEM, "out of memory") }
    addrs.pointee = array
    count.pointee = addresses.count
    handle.succeeded()
    return 0
}

@_cdecl("httpdns_get_cookie_header")
public func httpdns_get_cookie_header(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?
) -> UnsafeMutablePointer<CChar>? {
    guard let handle = ClientHandle.from(client) else { return nil }
    guard let url = string(url) else {
        handle.failed(-EINVAL, "url is NULL")
        return nil
    }
    do {
        return handle.returning(try handle.connection.cookieHeader(url: url, host: string(host)).header)
    } catch {
        handle.failed(error)
        return nil
    }
}

@_cdecl("httpdns_handle_set_cookie")
public func httpdns_handle_set_cookie(
    _ client: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?,
    _ setCookie: UnsafePointer<UnsafePointer<CChar>?>?, _ n: Int
) -> Int32 {
    guard let handle = ClientHandle.from(client) else { return -EINVAL }
    guard let url = string(url) else { return handle.failed(-EINVAL, "url is NULL") }
    guard n == 0 || setCookie != nil else { return handle.failed(-EINVAL, "set_cookie is NULL") }
    var values: [String] = []
    values.reserveCapacity(n)
    for i in 0..<n {
        guard let value = string(setCookie![i]) else { return handle.failed(-EINVAL, "set_cookie[\(i)] is NULL") }
        values.append(value)
    }
    do {
        _ = try handle.connection.handleSetCookie(url: url, host: string(host), setCookie: values)
    } catch {
        return handle.failed(error)
    }
    handle.succeeded()
    return 0
}

@_cdecl("httpdns_delete_cookies")
public func httpdns_delete_cookies(_ client: OpaquePointer?, _ url: UnsafePointer<CChar>?) -> Int {
    guard let handle = ClientHandle.from(client) else { return Int(-EINVAL) }
    guard let url = string(url) else { return Int(handle.failed(-EINVAL, "url is NULL")) }
    do {
        let deleted = try handle.connection.deleteCookies(DeleteCookiesParams(target: .url(url, host: nil)))
        handle.succeeded()
        return deleted
    } catch {
        return Int(handle.failed(error))
    }
}

@_cdecl("httpdns_last_error")
public func httpdns_last_error(
    _ client: OpaquePointer?, _ message: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> Int32 {
    guard let handle = ClientHandle.from(client) else {
        message?.pointee = nil
        return -EINVAL
    }
    message?.pointee = handle.lastMessage.map { UnsafePointer($0) } ?? emptyCString
    return handle.lastCode
}

@_cdecl("httpdns_free")
public func httpdns_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

@_cdecl("httpdns_free_addrs")
public func httpdns_free_addrs(_ addrs: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ count: Int) {
    CStringArray.free(addrs, count: count)
}

@_cdecl("httpdns_version")
public func httpdns_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(ClientVersion.staticString.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// "" in static storage, for a handle that has made no call yet.
private var emptyCString: UnsafePointer<CChar> {
    UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}

extension ClientHandle {
    /// A malloc'd copy of `text` for the caller, recording success (or ENOMEM).
    func returning(_ text: String) -> UnsafeMutablePointer<CChar>? {
        guard let copy = strdup(text) else {
            failed(-ENOMEM, "out of memory")
            return nil
        }
        succeeded()
        return copy
    }
}

/// malloc'd arrays of malloc'd strings, the shape of `httpdns_resolve`'s `char **`.
enum CStringArray {
    static func make(_ strings: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard
            let raw = malloc(strings.count * MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)
        else { return nil }
        let array = raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: strings.count)
        for (i, string) in strings.enumerated() {
            guard let copy = strdup(string) else {
                free(array, count: i)
                return nil
            }
            array[i] = copy
        }
        return array
    }

    static func free(_ array: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, count: Int) {
        guard let array else { return }
        for i in 0..<count { Glibc.free(array[i]) }
        Glibc.free(array)
    }
}
