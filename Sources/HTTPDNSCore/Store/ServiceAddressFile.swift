import HTTPDNSProtocol

/// The state directory's `service-addresses.json`: the scheduler answers a restart starts from,
/// `{"version":1,"lists":[{"key":"...","addresses":["..."],"fetchedAt":UNIX}]}`.
///
/// What is read back goes where every name is sent, so it is checked as a scheduler answer is:
/// a file past `maxBytes`, of another version or shape, or with anything but usable IP literals
/// is ignored whole (the scheduler is asked again).
public enum ServiceAddressFile {
    /// The file's name in the state directory.
    public static let name = "service-addresses.json"
    /// Far above a few upstreams' lists of `AlibabaScheduler.maxAddresses` addresses per family.
    public static let maxBytes = 64 * 1024
    /// Lists kept (one per scheduled upstream).
    public static let maxLists = 64

    public static func encode(_ lists: [PersistedServiceAddresses]) -> [UInt8] {
        var out = JSONOutput()
        JSONWriter.raw(#"{"version":1,"lists":["#, to: &out)
        for (i, list) in lists.prefix(maxLists).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.raw(#"{"key":"#, to: &out)
            JSONWriter.string(list.key, to: &out)
            JSONWriter.raw(#","addresses":"#, to: &out)
            JSONWriter.stringArray(list.addresses, to: &out)
            JSONWriter.raw(#","fetchedAt":"#, to: &out)
            JSONWriter.integer(list.fetchedAt, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw("]}\n", to: &out)
        return out.bytes
    }

    /// The lists of a file, or nil when it is not one this daemon wrote.
    public static func decode(_ bytes: [UInt8]) -> [PersistedServiceAddresses]? {
        guard bytes.count <= maxBytes, let json = try? JSONParser.parse(bytes),
            json["version"]?.numberValue?.int64Value == 1, let elements = json["lists"]?.arrayValue,
            elements.count <= maxLists
        else { return nil }
        var lists: [PersistedServiceAddresses] = []
        for element in elements {
            guard let key = element["key"]?.stringValue, key.utf8.count <= 4_096,
                let fetchedAt = element["fetchedAt"]?.numberValue?.int64Value,
                let items = element["addresses"]?.arrayValue, !items.isEmpty,
                items.count <= 2 * AlibabaScheduler.maxAddresses
            else { return nil }
            var addresses: [String] = []
            for item in items {
                guard let text = item.stringValue, let address = IPAddress(text), ServiceAddressRules.isUsable(address)
                else { return nil }
                if !addresses.contains(address.description) { addresses.append(address.description) }
            }
            lists.append(PersistedServiceAddresses(key: key, addresses: addresses, fetchedAt: fetchedAt))
        }
        return lists
    }
}
