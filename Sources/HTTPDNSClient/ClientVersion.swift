/// The version of the clients (httpdnsctl, libhttpdns.so), in step with the daemon's.
public enum ClientVersion {
    public static let string = "0.1.0"
    /// The same, NUL-terminated in static storage, for C callers (`httpdns_version`).
    public static let staticString: StaticString = "0.1.0"
}
