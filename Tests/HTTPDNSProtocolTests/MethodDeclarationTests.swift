import HTTPDNSProtocol
import Testing

struct MethodDeclarationTests {
    /// Counters and method tables are arrays indexed by `ordinal`: it is each method's place in
    /// `allCases`, one per method.
    @Test func ordinalIsThePlaceInAllCases() {
        #expect(Method.allCases.map(\.ordinal) == Array(Method.allCases.indices))
    }

    /// The methods skipped when nobody reads their answer are exactly the reads.
    @Test func onlyTheReadsHaveNoEffects() {
        let reads: Set<Method> = [
            .reverse, .getCookieHeader, .listCookies, .exportCookies, .status, .showCache, .statistics, .metrics,
            .monitor, .discover,
        ]
        #expect(Set(Method.allCases.filter { !$0.hasEffects }) == reads)
    }
}
