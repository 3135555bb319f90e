/// A whole response to a GET or POST, the interim (1xx) ones skipped.
public struct HTTP1Response: Sendable, Equatable {
    public var status: Int
    /// The final response's fields in order; repeated ones (Set-Cookie) stay separate. Trailers are dropped.
    public var fields: [UpstreamHeader]
    public var body: [UInt8]
    /// The connection may carry the next request: its framing ended the body, neither side asked to
    /// close it (HTTP/1.0 must ask to keep it), and nothing came after the response.
    public var connectionReusable: Bool
}

/// Why a response could not be read. Every limit and malformation ends here, never in a trap.
public enum HTTP1ResponseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status lines and fields (interim responses included) exceed the limit.
    case headTooLarge(limit: Int)
    /// The body (declared or received) exceeds the limit.
    case bodyTooLarge(limit: Int)
    /// Not HTTP/1.x as RFC 9112 writes it.
    case malformed(String)
    /// The connection ended before the response did.
    case truncated(String)

    public var description: String {
        switch self {
        case .headTooLarge(let limit): "response head over \(limit) bytes"
        case .bodyTooLarge(let limit): "response body over \(limit) bytes"
        case .malformed(let why): "malformed HTTP response: \(why)"
        case .truncated(let why): why
        }
    }
}

/// Reads an HTTP/1.1 or 1.0 response (RFC 9112) from bytes fed as they arrive, without I/O: the
/// status line, the fields (no obs-fold, bare CR or NUL), interim 1xx responses skipped, and the
/// body framed by Content-Length, chunked coding (extensions ignored, trailers read and dropped)
/// or the end of the connection. 204 and 304 have no body (requests are never HEAD). Every part
/// is bounded by `Limits`.
///
/// Untrusted input from the network, fuzzed: no input traps.
public struct HTTP1ResponseParser: Sendable {
    public struct Limits: Sendable {
        /// Status lines and fields of the interim responses and the final one, line ends included.
        public var maxHeadBytes: Int
        public var maxBodyBytes: Int
        /// The trailer section of a chunked body.
        public var maxTrailerBytes: Int
        /// One chunk-size line, extensions included.
        public var maxChunkLineBytes: Int

        public init(
            maxBodyBytes: Int, maxHeadBytes: Int = 64 << 10, maxTrailerBytes: Int = 16 << 10,
            maxChunkLineBytes: Int = 1024
        ) {
            self.maxHeadBytes = maxHeadBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxTrailerBytes = maxTrailerBytes
            self.maxChunkLineBytes = maxChunkLineBytes
        }
    }

    private enum State: Sendable, Equatable {
        case statusLine
        case fields
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    public let limits: Limits
    private var state = State.statusLine
    /// The line being read, without what follows its LF.
    private var line: [UInt8] = []
    private var headBytes = 0
    private var trailerBytes = 0
    private var minorVersion = 1
    private var status = 0
    private var fields: [UpstreamHeader] = []
    private var body: [UInt8] = []
    private var reusable = true
    /// Every byte fed so far: zero means the peer sent nothing at all.
    public private(set) var receivedBytes = 0

    public init(limits: Limits) { self.limits = limits }

    /// Reads `input`; the response once it is complete, else nil (feed more). Bytes after a complete
    /// response make its connection unusable; feeding after it is an error.
    public mutating func feed(_ input: UnsafeRawBufferPointer) throws(HTTP1ResponseError) -> HTTP1Response? {
        guard state != .done else { throw .malformed("bytes after the end of the response") }
        receivedBytes += input.count
        var index = 0
        while index < input.count {
            switch state {
            case .statusLine:
                guard
                    let text = try readLine(input, &index, .head)
                else { break }
                headBytes += text.raw
                try readStatusLine(text.line)
                state = .fields
            case .fields:
                guard
                    let text = try readLine(input, &index, .head)
                else { break }
                headBytes += text.raw
                if text.line.isEmpty {
                    try endOfHead()
                } else {
                    try readField(text.line)
                }
            case .body(let remaining):
                let count = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<(index + count)]))
                index += count
                state = remaining == count ? .done : .body(remaining: remaining - count)
            case .untilClose:
                let count = input.count - index
                guard count <= limits.maxBodyBytes - body.count else { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index...]))
                index = input.count
            case .chunkSize:
                guard
                    let text = try readLine(input, &index, .chunkSize)
                else { break }
                let size = try chunkSize(text.line)
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let count = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<(index + count)]))
                index += count
                state = remaining == count ? .chunkDataEnd : .chunkData(remaining: remaining - count)
            case .chunkDataEnd:
                guard
                    let text = try readLine(input, &index, .chunkDataEnd)
                else { break }
                guard text.line.isEmpty else { throw .malformed("chunk data not followed by CRLF") }
                state = .chunkSize
            case .trailers:
                guard
                    let text = try readLine(input, &index, .trailer)
                else { break }
                trailerBytes += text.raw
                if text.line.isEmpty { state = .done }
            case .done:
                break
            }
            if state == .done {
                if index < input.count { reusable = false }
                return response()
            }
        }
        return nil
    }

    /// The end of the connection: the response when its body runs until the close, else why it is incomplete.
    public mutating func finish() throws(HTTP1ResponseError) -> HTTP1Response {
        switch state {
        case .untilClose:
            state = .done
            return response()
        case .statusLine where receivedBytes == 0:
            throw .truncated("the connection closed before a response")
        case .done:
            throw .malformed("the response was already complete")
        default:
            throw .truncated("the connection closed in the middle of the response")
        }
    }

    private func response() -> HTTP1Response {
        HTTP1Response(status: status, fields: fields, body: body, connectionReusable: reusable)
    }

    // MARK: lines

    /// The lines read, each with its own bound.
    private enum LineKind {
        case head, chunkSize, chunkDataEnd, trailer
    }

    /// Moves the bytes of `input` from `index` up to and including the next LF into the current line,
    /// within what a line of `kind` may still take; the line without CRLF (or LF) and its size with
    /// them once the LF is there, else nil.
    private mutating func readLine(_ input: UnsafeRawBufferPointer, _ index: inout Int, _ kind: LineKind)
        throws(HTTP1ResponseError) -> (line: [UInt8], raw: Int)?
    {
        let rest = input[index...]
        let end = rest.firstIndex(of: 0x0A).map { $0 + 1 } ?? input.count
        guard end - index <= budget(kind) - line.count else {
            switch kind {
            case .head: throw .headTooLarge(limit: limits.maxHeadBytes)
            case .chunkSize: throw .malformed("a chunk-size line over \(limits.maxChunkLineBytes) bytes")
            case .chunkDataEnd: throw .malformed("chunk data not followed by CRLF")
            case .trailer: throw .malformed("a trailer section over \(limits.maxTrailerBytes) bytes")
            }
        }
        line.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<end]))
        index = end
        guard line.last == 0x0A else { return nil }
        let raw = line.count
        var text = line
        line.removeAll(keepingCapacity: true)
        text.removeLast()
        if text.last == 0x0D { text.removeLast() }
        if text.contains(0x0D) { throw .malformed("a bare CR") }
        if text.contains(0) { throw .malformed("a NUL byte") }
        return (text, raw)
    }

    private func budget(_ kind: LineKind) -> Int {
        switch kind {
        case .head: limits.maxHeadBytes - headBytes
        case .chunkSize: limits.maxChunkLineBytes
        case .chunkDataEnd: 2
        case .trailer: limits.maxTrailerBytes - trailerBytes
        }
    }

    // MARK: head

    /// `HTTP/1.x SP 3DIGIT [SP reason]`: the reason is not kept.
    private mutating func readStatusLine(_ line: [UInt8]) throws(HTTP1ResponseError) {
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, line.starts(with: prefix), Self.isDigit(line[7]), line[8] == 0x20,
            line[9...11].allSatisfy(Self.isDigit), line.count == 12 || line[12] == 0x20
        else { throw .malformed("not an HTTP/1.x status line") }
        let code = line[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard code >= 100 else { throw .malformed("status code \(code)") }
        minorVersion = Int(line[7] - 0x30)
        status = code
    }

    /// `name ":" OWS value OWS`, the name a token.
    private mutating func readField(_ line: [UInt8]) throws(HTTP1ResponseError) {
        guard line[0] != 0x20 && line[0] != 0x09 else { throw .malformed("a folded field line (obs-fold)") }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            line[..<colon].allSatisfy(Self.isTokenByte)
        else { throw .malformed("a field line without a valid name") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
        fields.append(
            UpstreamHeader(String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    /// The empty line: an interim response starts over, a final one decides how its body is framed
    /// (RFC 9112 section 6.3).
    private mutating func endOfHead() throws(HTTP1ResponseError) {
        if status < 200 {
            guard status != 101 else { throw .malformed("101 Switching Protocols to a request that asked for none") }
            fields.removeAll()
            state = .statusLine
            return
        }
        var contentLength: Int?
        var codings: [[UInt8]] = []
        var connection: [[UInt8]] = []
        for field in fields {
            switch Self.lowercased(field.name) {
            case "content-length":
                let elements = Self.listElements(field.value)
                guard !elements.isEmpty else { throw .malformed("an empty Content-Length") }
                for element in elements {
                    let length = try Self.decimal(element)
                    if let contentLength, contentLength != length {
                        throw .malformed("conflicting Content-Length values")
                    }
                    contentLength = length
                }
            case "transfer-encoding":
                codings += Self.listElements(field.value).map { $0.map(Self.lowercasedByte) }
            case "connection":
                connection += Self.listElements(field.value).map { $0.map(Self.lowercasedByte) }
            default:
                continue
            }
        }
        let close = connection.contains(Array("close".utf8))
        reusable = minorVersion >= 1 ? !close : !close && connection.contains(Array("keep-alive".utf8))
        if !codings.isEmpty && contentLength != nil {
            throw .malformed("both Transfer-Encoding and Content-Length")
        }
        if status == 204 || status == 304 {
            state = .done
        } else if !codings.isEmpty {
            guard codings == [Array("chunked".utf8)] else { throw .malformed("a transfer coding other than chunked") }
            // Chunked in an HTTP/1.0 response is faulty framing: the connection is not reused (section 6.1).
            if minorVersion == 0 { reusable = false }
            state = .chunkSize
        } else if let contentLength {
            guard contentLength <= limits.maxBodyBytes else { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
            body.reserveCapacity(min(contentLength, 64 << 10))
            state = contentLength == 0 ? .done : .body(remaining: contentLength)
        } else {
            reusable = false
            state = .untilClose
        }
    }

    // MARK: chunks

    /// `1*HEXDIG [BWS ";" extensions]`: the size, within what the body may still take.
    private func chunkSize(_ line: [UInt8]) throws(HTTP1ResponseError) -> Int {
        var size = 0
        var index = 0
        while index < line.count, let digit = Self.hexValue(line[index]) {
            guard size <= (Int.max - 15) / 16 else { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
            size = size * 16 + digit
            index += 1
        }
        guard index > 0 else { throw .malformed("a chunk-size line without a size") }
        while index < line.count, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
        guard index == line.count || line[index] == UInt8(ascii: ";") else {
            throw .malformed("a chunk-size line with more than a size and extensions")
        }
        guard size <= limits.maxBodyBytes - body.count else { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
        return size
    }

    // MARK: bytes

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }

    /// RFC 9110 tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private static func lowercasedByte(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }

    private static func lowercased(_ name: String) -> String {
        String(decoding: name.utf8.map(lowercasedByte), as: UTF8.self)
    }

    /// The non-empty elements of a comma-separated list, whitespace trimmed.
    private static func listElements(_ value: String) -> [[UInt8]] {
        value.utf8.split(separator: UInt8(ascii: ",")).compactMap { element in
            let trimmed = element.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }
            return trimmed.isEmpty ? nil : Array(trimmed.reversed())
        }
    }

    /// `1*DIGIT`; a value too large for an Int saturates (it is over any body limit).
    private static func decimal(_ digits: [UInt8]) throws(HTTP1ResponseError) -> Int {
        guard !digits.isEmpty, digits.allSatisfy(isDigit) else {
            throw .malformed("a Content-Length that is not a number")
        }
        var value = 0
        for digit in digits {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int(digit - 0x30))
            if overflow1 || overflow2 { return Int.max }
            value = sum
        }
        return value
    }
}
