/// A URI reference split into RFC 3986's five components (appendix B), with reference
/// resolution (section 5.2): what a client needs to follow a relative `Location`.
///
/// It splits and joins text; it does not validate or normalize beyond what section 5.2 asks
/// (dot-segment removal), so the resolved URL keeps the server's spelling.
public struct URLReference: Sendable, Equatable, CustomStringConvertible {
    public var scheme: String?
    /// The part after `//` (userinfo, host, port), when there is one.
    public var authority: String?
    public var path: String
    public var query: String?
    public var fragment: String?

    public init(scheme: String?, authority: String?, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// Splits any string as appendix B's regular expression does; every string is some reference.
    public init(_ text: String) {
        var rest = Substring(text)
        scheme = nil
        // A scheme is letters, digits, +, -, . before the first ':', starting with a letter (section 3.1);
        // a ':' after '/', '?' or '#' belongs to the path or later.
        if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isASCII, first.isLetter,
            rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        {
            scheme = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        } else {
            fragment = nil
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        } else {
            query = nil
        }
        if rest.hasPrefix("//") {
            let afterSlashes = rest.dropFirst(2)
            let end = afterSlashes.firstIndex(of: "/") ?? afterSlashes.endIndex
            authority = String(afterSlashes[..<end])
            rest = afterSlashes[end...]
        } else {
            authority = nil
        }
        path = String(rest)
    }

    /// Recomposition (section 5.3).
    public var description: String {
        var text = ""
        if let scheme { text += scheme + ":" }
        if let authority { text += "//" + authority }
        text += path
        if let query { text += "?" + query }
        if let fragment { text += "#" + fragment }
        return text
    }

    /// This reference resolved against `base` (section 5.2.2, strict parser). `base` should be absolute.
    public func resolved(against base: URLReference) -> URLReference {
        if scheme != nil {
            return URLReference(
                scheme: scheme, authority: authority, path: Self.removeDotSegments(path), query: query,
                fragment: fragment)
        }
        if authority != nil {
            return URLReference(
                scheme: base.scheme, authority: authority, path: Self.removeDotSegments(path), query: query,
                fragment: fragment)
        }
        if path.isEmpty {
            return URLReference(
                scheme: base.scheme, authority: base.authority, path: base.path, query: query ?? base.query,
                fragment: fragment)
        }
        let merged = path.hasPrefix("/") ? path : Self.merge(base: base, path)
        return URLReference(
            scheme: base.scheme, authority: base.authority, path: Self.removeDotSegments(merged), query: query,
            fragment: fragment)
    }

    /// Section 5.2.3.
    static func merge(base: URLReference, _ path: String) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return path }
        return String(base.path[...slash]) + path
    }

    /// Section 5.2.4, on whole segments.
    public static func removeDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input = input.dropFirst(3)
            } else if input.hasPrefix("./") {
                input = input.dropFirst(2)
            } else if input.hasPrefix("/./") {
                input = input.dropFirst(2)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = input.dropFirst(3)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                // Move the first segment (with its leading '/', if any) to the output.
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
