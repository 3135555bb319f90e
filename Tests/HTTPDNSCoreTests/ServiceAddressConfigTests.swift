import HTTPDNSCore
import Testing

/// `AlibabaRegion=`, `AlibabaBootAddresses=`, `SchedulerRefresh=`, `TencentBackupAddresses=`.
struct ServiceAddressConfigTests {
    func parse(_ text: String) -> Result<(DaemonConfiguration, [ConfigWarning]), ConfigProblems> {
        DaemonConfiguration.parse(text: "[Resolver]\n" + text, path: "/etc/httpdnsd/httpdnsd.conf")
    }

    func errors(_ text: String) -> [String] {
        guard case .failure(let problems) = parse(text) else { return [] }
        return problems.errors.map(\.message)
    }

    @Test func theKeysAndTheirDefaults() throws {
        let (none, _) = try parse("").get()
        #expect(none.resolver.alibabaRegion == nil)
        #expect(none.resolver.alibabaBootAddresses == nil)
        #expect(none.resolver.schedulerRefreshMs == 6 * 3_600_000)
        #expect(none.resolver.tencentBackupAddresses.isEmpty)
        let (set, warnings) = try parse(
            """
            Upstream=alibaba http://127.0.0.2/100000
            Upstream=tencent http://127.0.0.2
            AlibabaRegion=HK
            AlibabaBootAddresses=127.0.0.3 ::1
            AlibabaBootAddresses=127.0.0.4 127.0.0.3
            SchedulerRefresh=30min
            TencentBackupAddresses=127.0.0.5
            TencentBackupAddresses=0:0:0:0:0:0:0:1
            Route=alibaba example.com
            Route=tencent example.org
            """
        ).get()
        #expect(warnings.isEmpty)
        #expect(set.resolver.alibabaRegion == "hk")
        #expect(set.resolver.alibabaBootAddresses == ["127.0.0.3", "::1", "127.0.0.4"])
        #expect(set.resolver.schedulerRefreshMs == 1_800_000)
        #expect(set.resolver.tencentBackupAddresses == ["127.0.0.5", "::1"])
        let (reset, _) = try parse("AlibabaRegion=cn\nAlibabaBootAddresses=127.0.0.3\nAlibabaBootAddresses=\n").get()
        #expect(reset.resolver.alibabaBootAddresses == nil)
    }

    @Test func mistakesAreErrorsAndPointlessKeysWarn() throws {
        #expect(errors("AlibabaRegion=eu") == ["unknown region \"eu\" (expected one of cn, hk, sg, us, de)"])
        #expect(
            errors("AlibabaBootAddresses=127.0.0.3") == [
                "AlibabaBootAddresses= needs AlibabaRegion= (the region the scheduler is asked for)"
            ])
        #expect(
            errors("AlibabaRegion=cn\nAlibabaBootAddresses=boot.example") == [
                "invalid service address \"boot.example\" (expected an IP address)"
            ])
        #expect(errors("TencentBackupAddresses=0.0.0.0").count == 1)
        #expect(errors("TencentBackupAddresses=224.0.0.1").count == 1)
        #expect(errors("SchedulerRefresh=0").count == 1)
        #expect(errors("AlibabaRegon=cn").first?.contains("did you mean AlibabaRegion=?") == true)
        let (_, warnings) = try parse("AlibabaRegion=cn\nTencentBackupAddresses=127.0.0.5\n").get()
        #expect(
            warnings.map(\.message) == [
                "AlibabaRegion= is set but no upstream is alibaba",
                "TencentBackupAddresses= is set but no upstream is tencent",
            ])
    }
}
