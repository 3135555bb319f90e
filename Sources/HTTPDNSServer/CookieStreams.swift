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

/// `exportCookies`' result, `{"data":"…"}` (and `leftOut` when the format cannot hold some
/// cookie): the cookies.txt text written as one JSON string, a few lines at a time, from a
/// snapshot of the jar (`CookieJar.list`'s order), as `CookieJar.exportNetscape` writes it.
final class NetscapeExportStream: ResultStream {
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
            JSONWriter.raw(#"{"data":""#, to: &out)
            let leftOut = cookies.reduce(0) { $0 + (CookieJar.netscapeLine($1) == nil ? 1 : 0) }
            JSONWriter.stringContent(CookieJar.netscapeFileStart(leavingOut: leftOut), to: &out)
        }
        while next < cookies.count && out.count - start < budget {
            if let line = CookieJar.netscapeLine(cookies[next]) { JSONWriter.stringContent(line, to: &out) }
            next += 1
        }
        guard next == cookies.count else { return false }
        JSONWriter.raw(#"""#, to: &out)
        let leftOut = cookies.compactMap { CookieJar.netscapeLine($0) == nil ? $0.key : nil }
        if leftOut.isEmpty {
            out.append(UInt8(ascii: "}"))
        } else {
            // The members after `data`, as `ExportCookiesResult` writes them.
            var tail = JSONOutput()
            ExportCookiesResult(data: "", leftOut: leftOut).write(to: &tail)
            out.append(contentsOf: Array(tail.bytes.dropFirst(#"{"data":"""#.utf8.count)))
        }
        return true
    }
}
