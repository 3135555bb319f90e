import Glibc
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem

/// `httpdnsctl curl [--fallback] [CURL OPTIONS] URL`: runs the real curl IP-direct, on the
/// daemon's answer and with the shared cookie jar, following redirects hop by hop.
///
/// Each hop runs curl once with `--resolve host:port:addrs` from the daemon (so the URL, Host,
/// SNI and the certificate check keep the host name), the jar's `Cookie` header for that URL
/// merged with the user's, and `--dump-header` into a private file; the `Set-Cookie` fields of
/// every response go back to the jar for the URL that set them. curl's IP-direct pattern (an IP
/// URL with a Host header or `--host`) runs on the site's name, pinned to that IP. How the
/// user's `-D`, `-w`, `-i`, `-c` and `--stderr` still produce what curl would: see `CurlRequest`,
/// `WriteOutFormat`, `CurlCookieJar` and the man page.
struct CurlCommand {
    static let synopsis = "[--fallback] [--host NAME] [CURL OPTIONS] URL"
    static let abstract =
        "Run curl on URL IP-direct: hosts resolved and cookies kept by the daemon, redirects followed hop by hop."

    /// The curl program (tests may point it elsewhere with HTTPDNSCTL_CURL).
    static var program: String { ProcessEnvironment.value("HTTPDNSCTL_CURL") ?? "curl" }

    /// The exit status when curl cannot be started (as a shell's "command not found").
    static let cannotRunCurl: Int32 = 127

    /// httpdnsctl's own options in the curl command line, for help and completion.
    static let options: [OptionDoc] = [
        .flag("--fallback", "Run curl without the daemon when it cannot be reached."),
        .valued("--host", "NAME", "The site an IP-address URL is for (as -H 'Host: NAME'): run on NAME, to that IP."),
    ]

    /// `httpdnsctl help curl` (`httpdnsctl curl --help` is curl's own help).
    static var help: String {
        var text = "Usage: httpdnsctl [--socket PATH] curl \(synopsis)\n\n\(abstract)\n\n"
        text += "Options (every other option is curl's):\n"
        let width = (options.map(\.usage.count).max() ?? 0) + 2
        for option in options {
            text += "  \(option.usage)\(String(repeating: " ", count: width - option.usage.count))\(option.help)\n"
        }
        return text + """

            An IP-address URL with -H 'Host: NAME' or --host NAME (curl's IP-direct pattern) runs
            curl on the URL with NAME in place of the address and --resolve to that address: SNI,
            the certificate check, the Host header and the jar use NAME. -c FILE gets every cookie
            of the chain, as curl -L -c does; -v adds a line per cookie sent, stored or rejected.
            Without -v, a cookie the jar refused or could not store gets a warning (curl says nothing).
            An IP-address URL that several of your resolved names share, with no Host header, is
            refused before anything is sent (exit 68): name the host with -H 'Host: NAME'.

            Examples:
              httpdnsctl curl -sSL -c cookies.txt -d user=alice https://login.example.com/login
              httpdnsctl curl -v -H 'Host: web.example.com' https://203.0.113.10/

            """
    }

    let arguments: [String]
    /// nil when curl is only asked for help or its version: it runs plainly.
    let request: CurlRequest?

    init(_ arguments: [String]) throws(UsageError) {
        self.arguments = arguments
        let commandLine = try? CurlCommandLine(arguments)
        let informational =
            commandLine.map { line in
                line.urls.isEmpty && line.all("url").isEmpty
                    && line.options.contains { CurlRequest.informationOptions.contains($0.name) }
            } ?? false
        request = informational ? nil : try CurlRequest(arguments)
    }

    func run(socket: (path: String, origin: DaemonSocketPath.Origin)) -> CLIOutcome {
        guard let request else {
            return Self.runPlainly((try? CurlCommandLine(arguments))?.curlArguments(of: arguments) ?? arguments)
        }
        let connection = HTTPDNSConnection(socketPath: socket.path)
        do {
            try connection.connect()
        } catch {
            if request.fallback {
                return Self.runPlainly(request.plainArguments(arguments))
            }
            let notRun = "; curl not run (--fallback runs it without the daemon)"
            let message =
                UnreachableDaemon(error, origin: socket.origin)?.message(suffix: notRun)
                ?? "httpdnsctl: \(error.description)\(notRun)\n"
            return CLIOutcome(standardError: message, status: ExitStatus.unavailable)
        }
        var session: CurlSession
        do {
            session = try CurlSession(request: request, connection: connection)
        } catch {
            return CLIOutcome(standardError: "httpdnsctl: \(error.description)\n", status: ExitStatus.cannotCreate)
        }
        defer { session.removeScratch() }
        return session.run()
    }

    /// curl with the user's arguments and nothing of ours.
    static func runPlainly(_ arguments: [String]) -> CLIOutcome {
        do {
            return CLIOutcome(try Subprocess.spawn(program, arguments).wait())
        } catch {
            return CLIOutcome(
                standardError: "httpdnsctl: cannot run curl: \(error.description)\n", status: cannotRunCurl)
        }
    }
}

extension CLIOutcome {
    /// What httpdnsctl ends with when curl ended this way: its exit code, or its signal.
    init(_ termination: Subprocess.Termination) {
        switch termination {
        case .exited(let code): self.init(status: code)
        case .signaled(let signal): self.init(status: 128 + signal, signal: signal)
        }
    }
}

/// The daemon's ambiguous-address refusal: the caller's resolves gave the URL's IP address
/// several host names, and without a Host header nobody can say whose cookies a response sets.
struct AmbiguousAddress {
    var address: String
    var candidates: [String]

    init?(_ error: ClientError) {
        guard case .rpc(let rpc) = error, rpc.code == .invalidParams,
            rpc.data["reason"]?.stringValue == "ambiguous-address"
        else { return nil }
        address = rpc.data["address"]?.stringValue ?? ""
        candidates = (rpc.data["candidates"]?.arrayValue ?? []).compactMap(\.stringValue).map {
            CookieVerboseLines.printable(Substring($0))
        }
    }

    /// Why a cookie could not be stored.
    var reason: String {
        "\(address) is the address of several hosts (\(candidates.joined(separator: ", "))), so it is not known whose cookie it is"
    }

    /// What httpdnsctl says before it stops, curl not run for `target`.
    func message(for target: HTTPTarget, first: Bool) -> String {
        let which = first ? "" : " (redirected to \(target.url))"
        return """
            httpdnsctl: \(address)\(which) is the address of several hosts you resolved: \(candidates.joined(separator: ", ")); \
            say which with -H 'Host: NAME' (or --host NAME); curl not run

            """
    }
}

/// One `httpdnsctl curl` run: the hops, their scratch files and the user's output streams.
private struct CurlSession {
    let request: CurlRequest
    let connection: HTTPDNSConnection
    let scratch: String
    let format = WriteOutFormat(nonce: String(UInt64.random(in: .min ... .max), radix: 16))
    /// The user's standard input saved to a file, when a 307/308 may need to send it again.
    var savedInput: String?
    /// Where curl's standard error goes (`--stderr`).
    let errorOutput: FileDescriptor
    /// `-D FILE`, opened at the first hop.
    var headerFile: FileDescriptor?
    /// What `-i -o FILE` wrote for the redirects before the last response (curl -L keeps them).
    var carriedOutput: [UInt8] = []
    /// `-c`: the cookies of the chain so far, from each hop's curl.
    var cookieJar = CurlCookieJar()

    enum SetupError: Error, CustomStringConvertible {
        case file(String, SystemError)
        var description: String {
            switch self {
            case .file(let path, let error): return "\(path): \(error.errno)"
            }
        }
    }

    init(request: CurlRequest, connection: HTTPDNSConnection) throws(SetupError) {
        self.request = request
        self.connection = connection
        do { scratch = try Files.makeTemporaryDirectory(prefix: "httpdnsctl") } catch {
            throw .file("/tmp", error)
        }
        switch request.standardError {
        case nil: errorOutput = .standardError
        case "-": errorOutput = FileDescriptor(rawValue: 1)
        case let path?:
            do { errorOutput = try Self.create(path) } catch { throw .file(path, error) }
        }
        if request.follow && request.readsStandardInput && isatty(0) == 0 {
            let path = scratch + "/stdin"
            do {
                try Self.writeFile(path, try LocalFile.readBytes("-"), mode: 0o600)
            } catch let failure as LocalFile.Failure {
                throw .file("standard input", failure.error)
            } catch let error as SystemError {
                throw .file(path, error)
            } catch {
                throw .file(path, SystemError(errno: .ioError, call: "write"))
            }
            savedInput = path
        }
    }

    /// Runs the chain, then writes the user's `-c` jar (curl writes it whatever the outcome).
    mutating func run() -> CLIOutcome {
        let outcome = runChain()
        if let path = request.cookieJar { writeCookieJar(path) }
        return outcome
    }

    /// Hops until a response that is not followed; returns curl's exit status of that one.
    private mutating func runChain() -> CLIOutcome {
        // Ctrl-C and Ctrl-\ reach curl through the terminal; this process waits for it instead.
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        var hop = CurlRequest.Hop(target: request.url)
        while true {
            let outcome: HopOutcome
            switch runHop(hop) {
            case .finished(let result): return result
            case .ran(let result): outcome = result
            }
            let location = outcome.response.values("Location").first
            guard request.follow, outcome.termination == .exited(47), outcome.response.isRedirect, let location
            else {
                return finish(outcome)
            }
            if request.maxRedirects >= 0 && hop.redirects >= request.maxRedirects {
                return finish(outcome, curlError: (47, "Maximum (\(request.maxRedirects)) redirects followed"))
            }
            let next: HTTPTarget
            switch hop.target.redirect(to: location) {
            case .success(let target):
                next = target
            case .failure(.notHTTP):
                return finish(outcome, curlError: (1, "Protocol not supported for the redirect to \(location)"))
            case .failure(.ambiguous):
                // curl's URL-malformed code: the Location's host depends on who reads it.
                return finish(
                    outcome,
                    curlError: (
                        3,
                        "URL rejected: the redirect to \(location) names its host ambiguously (curl and the URL Standard read different hosts); not followed"
                    ))
            }
            if request.include, let file = request.outputFile, let written = try? Files.read(file, limit: .max) {
                carriedOutput += written
            }
            let dropsBody = request.dropsBody(status: outcome.response.status, kind: request.requestKind(of: hop))
            hop = CurlRequest.Hop(
                target: next, redirects: hop.redirects + 1, bodyDropped: hop.bodyDropped || dropsBody,
                referrer: hop.target.url)
        }
    }

    struct HopOutcome {
        var termination: Subprocess.Termination
        var response: HeaderDump
        var writeOut: [(stream: WriteOutStream, bytes: [UInt8])]
    }

    enum HopResult {
        /// curl ran; the loop decides what follows.
        case ran(HopOutcome)
        /// The run ends here (the daemon failed, curl could not start).
        case finished(CLIOutcome)
    }

    private mutating func runHop(_ hop: CurlRequest.Hop) -> HopResult {
        let target = hop.target
        var additions = CurlRequest.HopAdditions(dumpHeaderPath: scratch + "/headers")
        /// The user's cookie files when httpdnsctl sends their cookies itself.
        var fileCookies: CurlCookieFileCookies?
        if request.resolvesItself(target) {
            // The user's own --resolve decides.
        } else if let pinned = request.pinnedResolveEntry(for: target) {
            additions.resolve = pinned
        } else if !target.isIPLiteral {
            do {
                additions.resolve = try connection.resolveEntry(for: target)
            } catch {
                return .finished(failure(error, resolving: target.host))
            }
        }
        // An IP-address URL asks the jar even when no Cookie header goes out: an address that
        // several of the caller's names share must stop the request before it is sent, since the
        // cookies it sets could not be stored.
        let sendsCookies = !request.suppressesCookies(for: hop)
        if sendsCookies || target.isIPLiteral {
            var jar = ""
            do {
                jar = try connection.cookieHeader(url: target.url).header
            } catch {
                if let ambiguity = AmbiguousAddress(error) {
                    return .finished(
                        CLIOutcome(
                            standardError: ambiguity.message(for: target, first: hop.redirects == 0),
                            status: ExitStatus.ambiguousAddress))
                }
                if case .rpc = error {
                    warn("no cookies sent to \(target.url): \(error.description)")
                } else {
                    return .finished(failure(error, resolving: nil))
                }
            }
            if sendsCookies, let header = request.cookieHeader(jar: jar, for: hop) {
                if request.verbose { verbose(CookieVerboseLines.sending(header, to: target.host)) }
                var cookies = CurlCookieFile(
                    path: scratch + "/cookie", value: header, curlSendsCookies: request.readsCookieFile)
                // A value curl cannot take as its cookie string would be a second Cookie header
                // beside its engine's: httpdnsctl then sends the files' cookies in its own.
                if request.readsCookieFile && !cookies.isCookieString,
                    let files = CurlCookieFileCookies(files: request.cookieFiles)
                {
                    cookies = CurlCookieFile(
                        path: cookies.path, value: files.header(to: target, then: header), curlSendsCookies: false)
                    additions.withoutCookieFiles = true
                    fileCookies = files
                }
                do {
                    try Self.writeFile(cookies.path, Array(cookies.contents.utf8), mode: 0o600)
                } catch {
                    return .finished(
                        CLIOutcome(
                            standardError: "httpdnsctl: \(cookies.path): \(error.description)\n",
                            status: ExitStatus.cannotCreate))
                }
                additions.cookies = cookies
            }
        }
        if let userFormat = request.writeOut {
            additions.writeOut = format.rewrite(userFormat, redirects: hop.redirects)
        }
        additions.include = request.dumpHeader == "-" && request.outputFile == nil
        unlink(additions.dumpHeaderPath)
        if request.cookieJar != nil {
            additions.cookieJar = scratch + "/jar"
            unlink(scratch + "/jar")
        }

        var demultiplexer = StandardErrorDemultiplexer(
            format: format,
            droppedLines: ["curl: (47) Maximum (0) redirects followed\n", "* Maximum (0) redirects followed\n"])
        let termination: Subprocess.Termination
        do {
            termination = try runCurl(request.arguments(for: hop, adding: additions), &demultiplexer)
        } catch {
            return .finished(
                CLIOutcome(
                    standardError: "httpdnsctl: cannot run curl: \(error.description)\n",
                    status: CurlCommand.cannotRunCurl
                ))
        }
        let dump = (try? Files.read(additions.dumpHeaderPath, limit: .max)) ?? []
        let response = HeaderDump(dump)
        let setCookie = response.values("Set-Cookie")
        if !setCookie.isEmpty {
            do {
                let result = try connection.handleSetCookie(url: target.url, setCookie: setCookie)
                if request.verbose {
                    verbose(CookieVerboseLines.decisions(setCookie: setCookie, result: result))
                } else {
                    // curl would print nothing; a cookie the jar refused is a login that silently fails.
                    for line in CookieVerboseLines.rejections(setCookie: setCookie, result: result, from: target.host) {
                        warn(line)
                    }
                }
            } catch {
                let reason = AmbiguousAddress(error)?.reason ?? error.description
                for value in setCookie {
                    warn(
                        "cookie \(CookieVerboseLines.name(ofSetCookie: value)) from \(target.host) not stored: \(reason)"
                    )
                }
            }
        }
        if let hopJar = additions.cookieJar {
            var text = (try? Files.read(hopJar, limit: .max)).map { String(decoding: $0, as: UTF8.self) }
            if let fileCookies {
                // That curl never read the files: their cookies go into its jar as it would have kept them.
                let named = Set(setCookie.compactMap { CurlCookieJar.key(ofSetCookie: $0, target: target) })
                let lines = fileCookies.jarLines(except: named)
                if !lines.isEmpty {
                    var base = text ?? CurlCookieJar.curlHeader
                    if !base.isEmpty && !base.hasSuffix("\n") { base += "\n" }
                    text = base + lines.map { $0 + "\n" }.joined()
                }
            }
            cookieJar.add(hopJar: text, setCookie: setCookie, target: target)
        }
        copyHeaders(dump)
        return .ran(HopOutcome(termination: termination, response: response, writeOut: demultiplexer.writeOut))
    }

    /// Runs curl, passing its standard error on as it comes.
    private func runCurl(_ arguments: [String], _ demultiplexer: inout StandardErrorDemultiplexer) throws(SystemError)
        -> Subprocess.Termination
    {
        var input: FileDescriptor?
        if let savedInput {
            input = FileDescriptor(rawValue: try syscall("open") { open(savedInput, O_RDONLY | O_CLOEXEC) })
        }
        defer { input?.close() }
        let child = try Subprocess.spawn(
            CurlCommand.program, arguments, standardInput: input, captureStandardError: true)
        let pipe = child.standardError!
        defer { pipe.close() }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        // Until end of file: curl exited (or closed its standard error).
        while true {
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try pipe.read(into: raw) }
            }
            guard case .success(.done(let count)) = result, count > 0 else { break }
            try? errorOutput.writeAll(demultiplexer.feed(chunk[..<count]))
        }
        try? errorOutput.writeAll(demultiplexer.finish())
        return try child.wait()
    }

    /// The user's `-D`: a file gets every hop's headers, `-` with the body in a file gets them on
    /// standard output (with the body on standard output it became `-i`).
    private mutating func copyHeaders(_ dump: [UInt8]) {
        guard let destination = request.dumpHeader, !dump.isEmpty else { return }
        if destination == "-" {
            if request.outputFile != nil { try? FileDescriptor(rawValue: 1).writeAll(dump) }
            return
        }
        if headerFile == nil { headerFile = try? Self.create(destination) }
        try? headerFile?.writeAll(dump)
    }

    /// The last hop's `--write-out`, curl's own complaint when httpdnsctl stopped the chain, and
    /// curl's exit status.
    private func finish(_ outcome: HopOutcome, curlError: (code: Int32, message: String)? = nil) -> CLIOutcome {
        if request.include, let file = request.outputFile, !carriedOutput.isEmpty {
            let last = (try? Files.read(file, limit: .max)) ?? []
            try? Self.writeFile(file, carriedOutput + last)
        }
        if let (code, message) = curlError, request.reportsErrors {
            try? errorOutput.writeAll(Array("curl: (\(code)) \(message)\n".utf8))
        }
        for part in outcome.writeOut {
            let destination = part.stream == .standardOutput ? FileDescriptor(rawValue: 1) : errorOutput
            try? destination.writeAll(part.bytes)
        }
        if let curlError { return CLIOutcome(status: curlError.code) }
        return CLIOutcome(outcome.termination)
    }

    private func failure(_ error: ClientError, resolving host: String?) -> CLIOutcome {
        switch error {
        case .rpc where host != nil:
            // curl's own code for a name it cannot resolve.
            let message = request.reportsErrors ? "httpdnsctl: cannot resolve \(host!): \(error.description)\n" : ""
            return CLIOutcome(standardError: message, status: 6)
        case .rpc, .malformedResponse:
            return CLIOutcome(standardError: "httpdnsctl: \(error.description)\n", status: ExitStatus.software)
        case .unreachable, .timeout, .connectionClosed:
            return CLIOutcome(standardError: "httpdnsctl: \(error.description)\n", status: ExitStatus.unavailable)
        }
    }

    /// The user's `-c FILE` (`-` for standard output), after everything else was written.
    private func writeCookieJar(_ path: String) {
        let bytes = Array(cookieJar.text.utf8)
        do {
            if path == "-" {
                try FileDescriptor(rawValue: 1).writeAll(bytes)
            } else {
                try Self.writeFile(path, bytes)
            }
        } catch {
            warn("cannot write the cookie jar \(path): \(error.description)")
        }
    }

    /// A `-v` line of httpdnsctl's, where curl's own go.
    private func verbose(_ text: String) {
        try? errorOutput.writeAll(Array(text.utf8))
    }

    private func warn(_ message: String) {
        guard request.reportsErrors else { return }
        try? FileDescriptor.standardError.writeAll(Array("httpdnsctl: warning: \(message)\n".utf8))
    }

    func removeScratch() {
        for name in ["headers", "cookie", "stdin", "jar"] { unlink(scratch + "/" + name) }
        rmdir(scratch)
    }

    /// Creates or truncates a file the user named, as curl does (mode 0666 less the umask).
    static func create(_ path: String, mode: mode_t = 0o666) throws(SystemError) -> FileDescriptor {
        FileDescriptor(rawValue: try syscall("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) })
    }

    static func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o666) throws(SystemError) {
        let fd = try create(path, mode: mode)
        try fd.closeAfter { () throws(SystemError) in try fd.writeAll(bytes) }
    }
}
