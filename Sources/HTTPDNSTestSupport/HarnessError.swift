/// A test harness could not do what it was asked (a child would not start, a server never
/// became ready); its description says what happened.
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
