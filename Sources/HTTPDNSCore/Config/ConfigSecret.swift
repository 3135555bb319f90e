/// A secret from the configuration (Alibaba's `SecretKey=`). Every textual form of it, including
/// `print`, `debugPrint`, `dump` and string interpolation of a containing value, shows
/// `<redacted>`, so a configuration can be logged without leaking the key.
public struct ConfigSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let value: String

    public init(_ value: String) {
        self.value = value
    }

    /// The secret itself, for the one place that signs requests. Never log it.
    public var revealed: String { value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
