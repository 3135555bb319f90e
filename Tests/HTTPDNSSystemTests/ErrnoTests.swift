import Glibc
import HTTPDNSSystem
import Testing

/// `Errno` reads the C library's own messages, from any thread, and `SystemError` carries one.
struct ErrnoTests {
    @Test func messagesAreTheCLibrarys() {
        #expect(Errno.noSuchFileOrDirectory.description == "No such file or directory")
        #expect(Errno.tooManyOpenFiles.description == "Too many open files")
        #expect(Errno(rawValue: ETXTBSY).description == "Text file busy")
        // A number the system does not know still has a message, not an empty string.
        #expect(Errno(rawValue: 9_999).description == "Unknown error 9999")
    }

    @Test func currentIsWhatTheFailedCallLeft() {
        #expect(close(-1) == -1)
        #expect(Errno.current == .badFileDescriptor)
    }

    @Test func aFailedSyscallNamesTheCallAndTheMessage() throws {
        let error = try #require(throws: SystemError.self) {
            _ = try syscall("open /nonexistent") { open("/nonexistent/file", O_RDONLY) }
        }
        #expect(error.errno == .noSuchFileOrDirectory)
        #expect(error.description == "open /nonexistent: No such file or directory")
    }

    /// strerror(3) may hand every thread one shared buffer; the messages must not mix.
    @Test func messagesDoNotMixAcrossThreads() async {
        let codes: [Errno] = [.permissionDenied, .connectionRefused, .noSpace, .brokenPipe]
        let expected = codes.map(\.description)
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    (0..<2_000).allSatisfy { round in
                        let code = codes[(index + round) % codes.count]
                        return code.description == expected[(index + round) % codes.count]
                    }
                }
            }
            for await consistent in group { #expect(consistent) }
        }
    }
}
