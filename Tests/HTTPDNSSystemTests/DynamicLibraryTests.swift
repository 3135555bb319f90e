import HTTPDNSSystem
import Testing

/// dlopen by SONAME, and the errors that name the library and dlerror's reason.
struct DynamicLibraryTests {
    @Test func opensALibraryBySoname() throws {
        let libc = try DynamicLibrary.open("libc.so.6")
        #expect(libc.soname == "libc.so.6")
    }

    @Test func aMissingLibraryNamesItselfAndDlerrorsReason() {
        #expect(throws: DynamicLibraryError.self) { try DynamicLibrary.open("libhttpdns-none.so.9") }
        do {
            _ = try DynamicLibrary.open("libhttpdns-none.so.9")
        } catch {
            #expect(error.library == "libhttpdns-none.so.9")
            #expect(error.reason.contains("cannot open shared object file"), "\(error.reason)")
            #expect(error.description.hasPrefix("cannot load libhttpdns-none.so.9: "))
        }
    }

    @Test func aMissingFunctionNamesTheLibraryAndTheFunction() throws {
        let error = try DynamicLibrary.open("libc.so.6").missing("curl_easy_init")
        #expect(error.description == "cannot load libc.so.6: no function curl_easy_init")
    }
}
