import HTTPDNSCore
import HTTPDNSProtocol

/// A result `{"MEMBER":[…]}` written a few elements at a time from a snapshot (the elements share
/// their strings with what they were copied from): `listCookies`' cookies, `showCache`'s entries.
final class ArrayResultStream<Element>: ResultStream {
    /// `{"MEMBER":[`.
    private let opening: StaticString
    private let elements: [Element]
    private let writeElement: (Element, inout JSONOutput) -> Void
    private var next = 0
    private var started = false
    let heldBytes: Int

    /// `stringBytes` counts what an element holds beyond its own stride.
    init(
        opening: StaticString, _ elements: [Element], stringBytes: (Element) -> Int,
        write: @escaping (Element, inout JSONOutput) -> Void
    ) {
        self.opening = opening
        self.elements = elements
        writeElement = write
        heldBytes = elements.reduce(elements.count * MemoryLayout<Element>.stride) { $0 + stringBytes($1) }
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> Bool {
        let start = out.count
        if !started {
            started = true
            JSONWriter.raw(opening, to: &out)
        }
        while next < elements.count && out.count - start < budget {
            if next > 0 { out.append(UInt8(ascii: ",")) }
            writeElement(elements[next], &out)
            next += 1
        }
        guard next == elements.count else { return false }
        JSONWriter.raw("]}", to: &out)
        return true
    }
}

extension ArrayResultStream where Element == Cookie {
    /// `listCookies`' result, `{"cookies":[…]}`, from a snapshot of the jar.
    convenience init(cookies: [Cookie]) {
        self.init(
            opening: #"{"cookies":["#, cookies,
            stringBytes: { $0.name.utf8.count + $0.value.utf8.count + $0.domain.utf8.count + $0.path.utf8.count },
            write: { cookie, out in cookie.write(to: &out) })
    }
}

extension ArrayResultStream where Element == ShowCacheResult.Entry {
    /// `showCache`'s result, `{"entries":[…]}`, from a snapshot of the cache.
    convenience init(cacheEntries: [ShowCacheResult.Entry]) {
        self.init(
            opening: #"{"entries":["#, cacheEntries,
            stringBytes: { $0.host.utf8.count + $0.addresses.reduce(0) { $0 + $1.utf8.count + 16 } },
            write: { entry, out in entry.write(to: &out) })
    }
}

/// `exportCookies`' result, `{"data":"…","leftOut":[…]}`: the cookies.txt text written as one
/// JSON string, a few lines at a time, from a snapshot of the jar (`CookieJar.list`'s order), the
/// same bytes as `CookieJar.exportNetscape`'s.
final class NetscapeExportStream: ResultStream {
    private let cookies: [Cookie]
    /// The cookies the format cannot hold, known before the first line (the text's start counts them).
    private let leftOut: [CookieKey]
    private var next = 0
    private var started = false
    let heldBytes: Int
    /// Finding the cookies the format cannot hold read every byte once (memchr's pace: 16 KiB
    /// a unit); the jar's count alone charged a jar of 4 KiB values a tenth of it.
    var preparationUnits: Int { heldBytes / 16384 }

    init(_ cookies: [Cookie]) {
        self.cookies = cookies
        leftOut = cookies.filter { !CookieJar.netscapeCanHold($0) }.map(\.key)
        heldBytes = cookies.reduce(cookies.count * MemoryLayout<Cookie>.stride) { total, cookie in
            total + cookie.name.utf8.count + cookie.value.utf8.count + cookie.domain.utf8.count
                + cookie.path.utf8.count
        }
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> Bool {
        let start = out.count
        if !started {
            started = true
            JSONWriter.raw(#"{"data":""#, to: &out)
            JSONWriter.stringContent(CookieJar.netscapeFileStart(leavingOut: leftOut.count), to: &out)
        }
        while next < cookies.count && out.count - start < budget {
            if let line = CookieJar.netscapeLine(cookies[next]) { JSONWriter.stringContent(line, to: &out) }
            next += 1
        }
        guard next == cookies.count else { return false }
        out.append(UInt8(ascii: "\""))
        ExportCookiesResult.writeEnd(leavingOut: leftOut, to: &out)
        return true
    }
}

/// `exportCookies` in Playwright's storageState JSON: the text as one JSON string, a few cookies
/// at a time; partitioned cookies, which the format has no place for, are left out and named.
final class StorageStateExportStream: ResultStream {
    private let cookies: [Cookie]
    private let leftOut: [CookieKey]
    private var next = 0
    private var started = false
    let heldBytes: Int
    var preparationUnits: Int { heldBytes / 16384 }

    init(_ snapshot: [Cookie]) {
        cookies = snapshot.filter(CookieJar.storageStateCanHold)
        leftOut = snapshot.filter { !CookieJar.storageStateCanHold($0) }.map(\.key)
        heldBytes = snapshot.reduce(snapshot.count * MemoryLayout<Cookie>.stride) { total, cookie in
            total + cookie.name.utf8.count + cookie.value.utf8.count + cookie.domain.utf8.count
                + cookie.path.utf8.count
        }
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> Bool {
        let start = out.count
        if !started {
            started = true
            JSONWriter.raw(#"{"data":""#, to: &out)
            JSONWriter.stringContent(CookieJar.storageStateStart, to: &out)
        }
        while next < cookies.count && out.count - start < budget {
            let object = CookieJar.storageStateObject(cookies[next]).encodedString
            JSONWriter.stringContent((next == 0 ? "" : ",") + object, to: &out)
            next += 1
        }
        guard next == cookies.count else { return false }
        JSONWriter.stringContent(CookieJar.storageStateEnd, to: &out)
        out.append(UInt8(ascii: "\""))
        ExportCookiesResult.writeEnd(leavingOut: leftOut, to: &out)
        return true
    }
}
