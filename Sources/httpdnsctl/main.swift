import Glibc
import HTTPDNSSystem

let outcome = CLI.run(Array(CommandLine.arguments.dropFirst()))
if !outcome.standardOutput.isEmpty { print(outcome.standardOutput, terminator: "") }
if !outcome.standardError.isEmpty { try? FileDescriptor.standardError.writeAll(Array(outcome.standardError.utf8)) }
exit(outcome.status)
