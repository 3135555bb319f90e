import Glibc
import HTTPDNSSystem

let outcome = CLI.run(Array(CommandLine.arguments.dropFirst()))
if !outcome.standardOutput.isEmpty { print(outcome.standardOutput, terminator: "") }
if !outcome.standardError.isEmpty { try? FileDescriptor.standardError.writeAll(Array(outcome.standardError.utf8)) }
if let signalNumber = outcome.signal {
    // curl died of a signal (Ctrl-C): end the same way, so the shell sees it.
    signal(signalNumber, SIG_DFL)
    raise(signalNumber)
}
exit(outcome.status)
