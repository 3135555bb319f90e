import HTTPDNSCore
import HTTPDNSProtocol

/// `listCookies`' result, `{"cookies":[…]}`, written a few cookies at a time from a snapshot
/// of the jar (the records share their strings with the jar's cookies).
final class CookieListStream: ResultStream {
    private let cookies: [Cookie]
    private var next = 0
    private var started = false
    let heldBytes: Int

    init(_ cookies: [Cookie]) {
        self.cookies = cookies
        heldBytes = cookies.reduce(cookies.count * MemoryLayout<Cookie>.stride) { total, cookie in
            total + cookie.name.utf8.count + cookie.value.utf8.count + cookie.domain.utf8.count
                + cookie.path.utf8.count
        }
    }

    func writeNext(to out: inout JSONOutput, budget: Int) -> Bool {
        let start = out.count
        if !started {
            started = true
            JSONWriter.raw(#"{"cookies":["#, to: &out)
        }
        while next < cookies.count && out.count - start < budget {
            if next > 0 { out.append(UInt8(ascii: ",")) }
            cookies[next].write(to: &out)
            next += 1
        }
        guard next == cookies.count else { return false }
        JSONWriter.raw("]}", to: &out)
        return true
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
