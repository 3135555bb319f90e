/// A `Set-Cookie` value split as far as httpdnsctl reads one (the daemon parses it for real):
/// the name and the attributes.
struct SetCookieFields {
    /// The text before the `=` of the first part, trimmed; nil when that part has no `=` (then
    /// it is a value: RFC 6265bis's nameless cookie).
    let name: String?
    /// The attributes after the first `;`, in order; names lowercased, names and values trimmed.
    let attributes: [(name: String, value: String)]

    init(_ value: String) {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false)
        let pair = parts.first ?? ""
        name = pair.firstIndex(of: "=").map { pair[..<$0].trimmingWhitespace() }
        attributes = parts.dropFirst().map { attribute in
            let equals = attribute.firstIndex(of: "=") ?? attribute.endIndex
            let value = equals == attribute.endIndex ? "" : attribute[attribute.index(after: equals)...]
            return (attribute[..<equals].trimmingWhitespace().lowercased(), value.trimmingWhitespace())
        }
    }

    /// The values of the attribute `name` (lowercase), in order.
    func values(_ name: String) -> [String] {
        attributes.filter { $0.name == name }.map(\.value)
    }
}
