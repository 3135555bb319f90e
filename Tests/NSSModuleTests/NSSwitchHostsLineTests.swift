import HTTPDNSSystem
import Testing

/// The daemon's own hosts services: nsswitch.conf's, without the httpdns module (no recursion).
struct NSSwitchHostsLineTests {
    func services(_ text: String) -> String {
        SystemResolver.hostsServices(inNSSwitch: text, leavingOut: "httpdns")
    }

    @Test func httpdnsAndItsActionBlockAreLeftOut() {
        #expect(services("hosts: files httpdns [!UNAVAIL=return] dns\n") == "files dns")
        #expect(services("hosts:\tfiles\thttpdns\t[ !UNAVAIL = return ]\tdns") == "files dns")
        #expect(services("hosts: httpdns [!UNAVAIL=return] files") == "files")
        #expect(
            services("hosts: files resolve [!UNAVAIL=return] httpdns [NOTFOUND=return] dns")
                == "files resolve [!UNAVAIL=return] dns")
        #expect(services("hosts: files httpdns[!UNAVAIL=return]dns") == "files dns")
    }

    @Test func otherServicesStayVerbatim() {
        #expect(
            services("hosts: files mdns4_minimal [NOTFOUND=return] dns myhostname")
                == "files mdns4_minimal [NOTFOUND=return] dns myhostname")
        // Only the exact service name: glibc would load libnss_httpdns2.so.2 for this one.
        #expect(services("hosts: files httpdns2 dns") == "files httpdns2 dns")
    }

    @Test func theLastHostsLineCountsAndOtherDatabasesDoNot() {
        let text = """
            # hosts: httpdns
            passwd: files systemd
            hosts: files httpdns dns
            hostsx: httpdns
              hosts  :  httpdns files myhostname
            networks: files
            """
        #expect(services(text) == "files myhostname")
        #expect(services("hosts: files dns\r\nhosts: httpdns [!UNAVAIL=return] files\r\n") == "files")
    }

    @Test func glibcsDefaultWhenNothingIsLeft() {
        #expect(services("") == "files dns")
        #expect(services("passwd: files\n") == "files dns")
        #expect(services("hosts: httpdns\n") == "files dns")
        #expect(services("hosts:\n") == "files dns")
    }

    @Test func anUnclosedActionBlockStaysWithItsService() {
        #expect(services("hosts: files httpdns [!UNAVAIL=return") == "files")
        #expect(services("hosts: files [NOTFOUND=return") == "files [NOTFOUND=return")
    }
}
