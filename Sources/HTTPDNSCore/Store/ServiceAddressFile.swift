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
        Contents(version: 1, lists: Array(lists.prefix(maxLists))).write(to: &out)
        out.append(UInt8(ascii: "\n"))
        return out.bytes
    }

    /// The lists of a file, or nil when it is not one this daemon wrote.
    public static func decode(_ bytes: [UInt8]) -> [PersistedServiceAddresses]? {
        guard bytes.count <= maxBytes, let json = try? JSONParser.parse(bytes), let contents = Contents(json: json),
            contents.lists.count <= maxLists
        else { return nil }
        var lists: [PersistedServiceAddresses] = []
        for saved in contents.lists {
            guard saved.key.utf8.count <= 4_096, !saved.addresses.isEmpty,
                saved.addresses.count <= 2 * AlibabaScheduler.maxAddresses
            else { return nil }
            var addresses: [String] = []
            for text in saved.addresses {
                guard let address = IPAddress(text), ServiceAddressRules.isUsable(address) else { return nil }
                if !addresses.contains(address.description) { addresses.append(address.description) }
            }
            lists.append(PersistedServiceAddresses(key: saved.key, addresses: addresses, fetchedAt: saved.fetchedAt))
        }
        return lists
    }

    /// The file's members; `version` is 1, the only one there is.
    private struct Contents: DescribedRecord {
        var version: Int64
        var lists: [PersistedServiceAddresses]

        static let blank = Contents(version: 1, lists: [])
        static let fields: [ResultField<Contents>] = [
            .integer("version", \.version, in: 1...1), .objects("lists", \.lists),
        ]
    }
}

/// One saved list as the file holds it (its addresses checked by `ServiceAddressFile.decode`).
extension PersistedServiceAddresses: DescribedRecord {
    public static let blank = PersistedServiceAddresses(key: "", addresses: [], fetchedAt: 0)
    public static let fields: [ResultField<PersistedServiceAddresses>] = [
        .string("key", \.key), .strings("addresses", \.addresses), .integer("fetchedAt", \.fetchedAt),
    ]
}
