/// The WHATWG basic URL parser for special schemes, on UTF-8 bytes, with a fast lane for the
/// plain ASCII URLs that nearly every request carries.
enum URLParser {
    /// `fastLane: false` runs the full parser alone (the fuzz target compares the two).
    static func parse(
        _ raw: UnsafeBufferPointer<UInt8>, base: HTTPURL?, toASCII: DomainToASCII?, fastLane: Bool = true
    ) -> HTTPURL? {
        if fastLane, let url = parsePlain(raw) { return url }
        // Leading and trailing C0 controls and spaces go, then every tab and newline; invalid
        // UTF-8 reads as U+FFFD, as the standard's input is a string of scalar values.
        var start = 0
        var end = raw.count
        while start < end && raw[start] <= 0x20 { start += 1 }
        while end > start && raw[end - 1] <= 0x20 { end -= 1 }
        var cleaned: [UInt8] = []
        cleaned.reserveCapacity(end - start)
        var hasNonASCII = false
        for index in start..<end {
            let byte = raw[index]
            if byte == 0x09 || byte == 0x0A || byte == 0x0D { continue }
            hasNonASCII = hasNonASCII || byte >= 0x80
            cleaned.append(byte)
        }
        if hasNonASCII { cleaned = Array(String(decoding: cleaned, as: UTF8.self).utf8) }
        return cleaned.withUnsafeBufferPointer { parseCleaned($0, base: base, toASCII: toASCII) }
    }

    // MARK: the fast lane

    /// `scheme://host[:port][/path][?query][#fragment]` in ASCII with a lowercase-able domain or
    /// a dotted-quad IPv4 host, no userinfo, and nothing that the standard would encode, decode
    /// or remove: then the URL is its own serialization (the scheme and host lowercased, a
    /// default port dropped). Anything else returns nil and takes the full parser; a fuzz
    /// target holds the two against each other.
    static func parsePlain(_ b: UnsafeBufferPointer<UInt8>) -> HTTPURL? {
        guard let plain = parsePlainParts(b) else { return nil }
        return HTTPURL(
            scheme: plain.scheme, host: plain.host, port: plain.port, path: plain.path,
            query: plain.query.map { String(decoding: UnsafeBufferPointer(rebasing: b[$0]), as: UTF8.self) },
            fragment: plain.fragment.map { String(decoding: UnsafeBufferPointer(rebasing: b[$0]), as: UTF8.self) })
    }

    /// `parsePlain`'s parts, the query and fragment left as ranges of `b`.
    static func parsePlainParts(_ b: UnsafeBufferPointer<UInt8>) -> HTTPURL.Plain? {
        let n = b.count
        var i = 0
        while i < n && i < 6 && b[i] != UInt8(ascii: ":") { i += 1 }
        guard i < n, i + 2 < n, b[i + 1] == UInt8(ascii: "/"), b[i + 2] == UInt8(ascii: "/"),
            let scheme = scheme(UnsafeBufferPointer(rebasing: b[0..<i]))
        else { return nil }
        let hostStart = i + 3
        var hostEnd = hostStart
        var hasUpper = false
        var labelStart = hostStart
        while hostEnd < n {
            let byte = b[hostEnd]
            if ASCIIByteSet.plainHostByte.contains(byte) {
                hostEnd += 1
            } else if byte == UInt8(ascii: ".") {
                // An `xn--` label needs IDNA validation.
                if isPunycodePrefix(b, labelStart, hostEnd) { return nil }
                hostEnd += 1
                labelStart = hostEnd
            } else if byte &- UInt8(ascii: "A") < 26 {
                hasUpper = true
                hostEnd += 1
            } else {
                break
            }
        }
        guard hostEnd > hostStart, !isPunycodePrefix(b, labelStart, hostEnd) else { return nil }
        let host: HTTPURL.Host
        let hostBytes = UnsafeBufferPointer(rebasing: b[hostStart..<hostEnd])
        if HostParser.endsInANumber(hostBytes) {
            guard let address = dottedQuad(hostBytes) else { return nil }
            host = .ipv4(address)
        } else {
            host = .domain(
                hasUpper
                    ? String(decoding: hostBytes.lazy.map(lowercased), as: UTF8.self)
                    : String(decoding: hostBytes, as: UTF8.self))
        }
        var index = hostEnd
        var port: UInt16?
        if index < n && b[index] == UInt8(ascii: ":") {
            index += 1
            var value = 0
            let digitsStart = index
            while index < n, b[index] &- UInt8(ascii: "0") < 10, index - digitsStart < 5 {
                value = value * 10 + Int(b[index] &- UInt8(ascii: "0"))
                index += 1
            }
            // An empty port, or a long one with leading zeros, takes the full parser.
            guard index > digitsStart, index - digitsStart < 5 || b[digitsStart] != UInt8(ascii: "0"),
                value <= 65535
            else { return nil }
            port = UInt16(value)
        }
        // The path: "/" or nothing, then segments of bytes that are never encoded and are
        // neither "." nor ".." (nor their %2e spellings, which contain "%").
        let pathStart = index
        var path = "/"
        if index < n && b[index] == UInt8(ascii: "/") {
            var segmentStart = index + 1
            index += 1
            while index < n {
                let byte = b[index]
                if ASCIIByteSet.plainPathByte.contains(byte) {
                    index += 1
                    continue
                }
                guard byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") else {
                    return nil
                }
                if isDotSegment(b, segmentStart, index) { return nil }
                if byte != UInt8(ascii: "/") { break }
                segmentStart = index + 1
                index += 1
            }
            if index == n, isDotSegment(b, segmentStart, index) { return nil }
            path = String(decoding: UnsafeBufferPointer(rebasing: b[pathStart..<index]), as: UTF8.self)
        } else if index < n && b[index] != UInt8(ascii: "?") && b[index] != UInt8(ascii: "#") {
            return nil
        }
        var query: Range<Int>?
        if index < n && b[index] == UInt8(ascii: "?") {
            let queryStart = index + 1
            index += 1
            while index < n, ASCIIByteSet.plainQueryByte.contains(b[index]) { index += 1 }
            guard index == n || b[index] == UInt8(ascii: "#") else { return nil }
            query = queryStart..<index
        }
        var fragment: Range<Int>?
        if index < n {
            let fragmentStart = index + 1
            index += 1
            while index < n, ASCIIByteSet.plainFragmentByte.contains(b[index]) { index += 1 }
            guard index == n else { return nil }
            fragment = fragmentStart..<n
        }
        return HTTPURL.Plain(
            scheme: scheme, host: host, port: port == scheme.defaultPort ? nil : port, path: path, query: query,
            fragment: fragment)
    }

    private static func isDotSegment(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        let length = end - start
        return (length == 1 && b[start] == UInt8(ascii: "."))
            || (length == 2 && b[start] == UInt8(ascii: ".") && b[start + 1] == UInt8(ascii: "."))
    }

    private static func isPunycodePrefix(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        end - start >= 4 && lowercased(b[start]) == UInt8(ascii: "x") && lowercased(b[start + 1]) == UInt8(ascii: "n")
            && b[start + 2] == UInt8(ascii: "-") && b[start + 3] == UInt8(ascii: "-")
    }

    /// Four decimal numbers of 0...255 without leading zeros, the only IPv4 form the fast lane takes.
    static func dottedQuad(_ b: UnsafeBufferPointer<UInt8>) -> UInt32? {
        var address: UInt32 = 0
        var parts = 0
        var index = 0
        while index < b.count {
            let start = index
            var value: UInt32 = 0
            while index < b.count, b[index] &- UInt8(ascii: "0") < 10, index - start < 3 {
                value = value * 10 + UInt32(b[index] &- UInt8(ascii: "0"))
                index += 1
            }
            guard index > start, value <= 255, index - start == 1 || b[start] != UInt8(ascii: "0") else { return nil }
            address = address << 8 | value
            parts += 1
            if index == b.count { break }
            guard b[index] == UInt8(ascii: "."), parts < 4 else { return nil }
            index += 1
        }
        return parts == 4 && index == b.count ? address : nil
    }

    // MARK: the full parser

    /// The basic URL parser's states for special URLs, on input already trimmed and stripped of
    /// tabs and newlines.
    private static func parseCleaned(
        _ b: UnsafeBufferPointer<UInt8>, base: HTTPURL?, toASCII: DomainToASCII?
    ) -> HTTPURL? {
        let n = b.count
        // Scheme start and scheme states.
        if n > 0, isASCIIAlpha(b[0]) {
            var end = 1
            while end < n, isSchemeByte(b[end]) { end += 1 }
            if end < n, b[end] == UInt8(ascii: ":") {
                guard let scheme = scheme(UnsafeBufferPointer(rebasing: b[0..<end])) else { return nil }
                var index = end + 1
                let startsWithTwoSlashes =
                    index + 1 < n && b[index] == UInt8(ascii: "/") && b[index + 1] == UInt8(ascii: "/")
                if let base, base.scheme == scheme, !startsWithTwoSlashes {
                    return relative(b, from: index, base: base, toASCII: toASCII)
                }
                while index < n, isSlash(b[index]) { index += 1 }
                return authority(b, from: index, scheme: scheme, toASCII: toASCII)
            }
        }
        guard let base else { return nil }
        return relative(b, from: 0, base: base, toASCII: toASCII)
    }

    /// The relative and relative slash states.
    private static func relative(
        _ b: UnsafeBufferPointer<UInt8>, from start: Int, base: HTTPURL, toASCII: DomainToASCII?
    ) -> HTTPURL? {
        let n = b.count
        var url = base
        url.fragment = nil
        var index = start
        if index < n, isSlash(b[index]) {
            index += 1
            if index < n, isSlash(b[index]) {
                while index < n, isSlash(b[index]) { index += 1 }
                return authority(b, from: index, scheme: base.scheme, toASCII: toASCII)
            }
            var path: [UInt8] = []
            return finishPath(b, from: index, path: &path, url: &url)
        }
        if index == n { return url }
        switch b[index] {
        case UInt8(ascii: "?"):
            return finishQuery(b, from: index + 1, url: &url)
        case UInt8(ascii: "#"):
            return finishFragment(b, from: index + 1, url: &url)
        default:
            url.query = nil
            var path = Array(base.path.utf8)
            shorten(&path)
            return finishPath(b, from: index, path: &path, url: &url)
        }
    }

    /// The authority, host and port states, then the path start state.
    private static func authority(
        _ b: UnsafeBufferPointer<UInt8>, from start: Int, scheme: HTTPURL.Scheme, toASCII: DomainToASCII?
    ) -> HTTPURL? {
        let n = b.count
        var end = start
        var lastAt = -1
        while end < n {
            let byte = b[end]
            if isSlash(byte) || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { lastAt = end }
            end += 1
        }
        var username = ""
        var password = ""
        var hostStart = start
        if lastAt >= 0 {
            var colon = lastAt
            for index in start..<lastAt where b[index] == UInt8(ascii: ":") {
                colon = index
                break
            }
            username = PercentEncoding.encode(UnsafeBufferPointer(rebasing: b[start..<colon]), .userinfo)
            if colon < lastAt {
                password = PercentEncoding.encode(UnsafeBufferPointer(rebasing: b[(colon + 1)..<lastAt]), .userinfo)
            }
            hostStart = lastAt + 1
        }
        var insideBrackets = false
        var hostEnd = end
        for index in hostStart..<end {
            let byte = b[index]
            if byte == UInt8(ascii: "[") { insideBrackets = true }
            if byte == UInt8(ascii: "]") { insideBrackets = false }
            if byte == UInt8(ascii: ":") && !insideBrackets {
                hostEnd = index
                break
            }
        }
        guard hostEnd > hostStart,
            let host = HostParser.parse(UnsafeBufferPointer(rebasing: b[hostStart..<hostEnd]), toASCII: toASCII)
        else { return nil }
        var port: UInt16?
        if hostEnd < end {
            var value = 0
            for index in (hostEnd + 1)..<end {
                let digit = b[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
                guard value <= 65535 else { return nil }
            }
            if hostEnd + 1 < end { port = UInt16(value) }
        }
        var url = HTTPURL(
            scheme: scheme, username: username, password: password, host: host, port: port, path: "/", query: nil,
            fragment: nil)
        // Path start state: one leading separator is the path's own.
        var index = end
        if index < n, isSlash(b[index]) { index += 1 }
        var path: [UInt8] = []
        return finishPath(b, from: index, path: &path, url: &url)
    }

    /// The path state, then query and fragment. `path` is the serialized path so far.
    private static func finishPath(
        _ b: UnsafeBufferPointer<UInt8>, from start: Int, path: inout [UInt8], url: inout HTTPURL
    ) -> HTTPURL? {
        let n = b.count
        var index = start
        var segmentStart = start
        while true {
            let atEnd = index == n
            let byte = atEnd ? 0 : b[index]
            if atEnd || isSlash(byte) || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                let segment = UnsafeBufferPointer(rebasing: b[segmentStart..<index])
                let endsWithSlash = !atEnd && isSlash(byte)
                if isDoubleDot(segment) {
                    shorten(&path)
                    if !endsWithSlash { path.append(UInt8(ascii: "/")) }
                } else if isSingleDot(segment) {
                    if !endsWithSlash { path.append(UInt8(ascii: "/")) }
                } else {
                    path.append(UInt8(ascii: "/"))
                    PercentEncoding.append(segment, .path, to: &path)
                }
                if atEnd {
                    url.path = String(decoding: path, as: UTF8.self)
                    url.query = nil
                    url.fragment = nil
                    return url
                }
                if !endsWithSlash {
                    url.path = String(decoding: path, as: UTF8.self)
                    if byte == UInt8(ascii: "?") { return finishQuery(b, from: index + 1, url: &url) }
                    url.query = nil
                    return finishFragment(b, from: index + 1, url: &url)
                }
                segmentStart = index + 1
            }
            index += 1
        }
    }

    private static func finishQuery(_ b: UnsafeBufferPointer<UInt8>, from start: Int, url: inout HTTPURL) -> HTTPURL? {
        var end = start
        while end < b.count && b[end] != UInt8(ascii: "#") { end += 1 }
        url.query = PercentEncoding.encode(UnsafeBufferPointer(rebasing: b[start..<end]), .specialQuery)
        url.fragment = nil
        if end == b.count { return url }
        return finishFragment(b, from: end + 1, url: &url)
    }

    private static func finishFragment(
        _ b: UnsafeBufferPointer<UInt8>, from start: Int, url: inout HTTPURL
    ) -> HTTPURL? {
        url.fragment = PercentEncoding.encode(UnsafeBufferPointer(rebasing: b[start..<b.count]), .fragment)
        return url
    }

    /// Removes the path's last segment ("/a/b" to "/a", "/" to "").
    private static func shorten(_ path: inout [UInt8]) {
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return }
        path.removeSubrange(slash...)
    }

    private static func isSingleDot(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
        (segment.count == 1 && segment[0] == UInt8(ascii: ".")) || isEncodedDot(segment, 0) && segment.count == 3
    }

    private static func isDoubleDot(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
        switch segment.count {
        case 2: return segment[0] == UInt8(ascii: ".") && segment[1] == UInt8(ascii: ".")
        case 4:
            return (segment[0] == UInt8(ascii: ".") && isEncodedDot(segment, 1))
                || (isEncodedDot(segment, 0) && segment[3] == UInt8(ascii: "."))
        case 6: return isEncodedDot(segment, 0) && isEncodedDot(segment, 3)
        default: return false
        }
    }

    /// "%2e" or "%2E" at `offset`.
    private static func isEncodedDot(_ segment: UnsafeBufferPointer<UInt8>, _ offset: Int) -> Bool {
        offset + 3 <= segment.count && segment[offset] == UInt8(ascii: "%") && segment[offset + 1] == UInt8(ascii: "2")
            && lowercased(segment[offset + 2]) == UInt8(ascii: "e")
    }

    // MARK: bytes

    static func scheme(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPURL.Scheme? {
        func matches(_ name: StaticString) -> Bool {
            guard bytes.count == name.utf8CodeUnitCount else { return false }
            return name.withUTF8Buffer { literal in
                for index in 0..<literal.count where lowercased(bytes[index]) != literal[index] { return false }
                return true
            }
        }
        if matches("https") { return .https }
        if matches("http") { return .http }
        if matches("wss") { return .wss }
        if matches("ws") { return .ws }
        return nil
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    private static func isSlash(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\")
    }

    private static func isASCIIAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isASCIIAlpha(byte) || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }
}
