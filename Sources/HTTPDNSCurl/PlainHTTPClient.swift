import HTTPDNSCore
import HTTPDNSSystem
import HTTPDNSURL

/// The requests `HTTPClient` serves without libcurl (`PlainHTTPTarget`): HTTP/1.1 over a TCP
/// socket on the calling thread, every wait bounded by the request's deadline, the response read
/// by `HTTP1ResponseParser`. One idle connection is kept for the next request to the same host and
/// port, as libcurl's connection cache did; a reused one that fails before any byte of the
/// response came is replaced once by a fresh one (the server may have closed it meanwhile).
///
/// Not thread-safe: one per `HTTPClient`, so one per worker thread.
final class PlainHTTPClient {
    /// The connection the last response left open, and the `authority` it goes to.
    private var idle: (authority: String, socket: DeadlineSocket)?

    init() {}

    deinit { idle?.socket.close() }

    func perform(_ request: HTTPRequest, to target: PlainHTTPTarget) -> Result<HTTPResponse, HTTPError> {
        guard request.timeoutMs >= 0 else { return .failure(HTTPError(.invalidRequest, "a negative timeout")) }
        guard let message = target.message(for: request) else {
            return .failure(HTTPError(.invalidRequest, "a header that cannot be sent"))
        }
        let deadline = Deadline(timeoutMs: request.timeoutMs)
        let limits = HTTP1ResponseParser.Limits(maxBodyBytes: max(0, request.maxBodyBytes))
        if let reused = takeIdle(to: target.authority) {
            switch exchange(message, on: reused, target: target, limits: limits, deadline: deadline) {
            case .success(let response): return .success(response)
            case .failure(let failure) where failure.responseStarted || failure.error.code != .transport:
                return .failure(failure.error)
            case .failure:
                break  // closed while idle: once more on a fresh connection
            }
        }
        let socket: DeadlineSocket
        switch connect(to: target, deadline: deadline) {
        case .success(let connected): socket = connected
        case .failure(let error): return .failure(error)
        }
        return exchange(message, on: socket, target: target, limits: limits, deadline: deadline).mapError(\.error)
    }

    /// The idle connection when it goes to `authority` and is still open; any other is closed.
    private func takeIdle(to authority: String) -> DeadlineSocket? {
        guard let (idleAuthority, socket) = idle else { return nil }
        idle = nil
        guard idleAuthority == authority, socket.isIdleAndOpen else {
            socket.close()
            return nil
        }
        return socket
    }

    private func connect(to target: PlainHTTPTarget, deadline: Deadline) -> Result<DeadlineSocket, HTTPError> {
        do {
            return .success(
                try DeadlineSocket.connect(to: target.addressBytes, port: target.port, deadline: deadline))
        } catch {
            switch error {
            case .timedOut:
                return .failure(
                    HTTPError(
                        .timeout,
                        "Connection to \(target.authority) timed out after \(deadline.elapsedMilliseconds) milliseconds"
                    ))
            case .failed(let system):
                return .failure(
                    HTTPError(
                        .transport, "Failed to connect to \(target.host.name) port \(target.port): \(system.errno)"))
            }
        }
    }

    /// Why an exchange failed, and whether any byte of the response had come.
    private struct ExchangeFailure: Error {
        let error: HTTPError
        let responseStarted: Bool
    }

    private enum ReadFailure: Error {
        case socket(SocketFailure)
        case parse(HTTP1ResponseError)
    }

    /// Sends `message` on `socket` and reads the response. The socket is kept idle when the
    /// response leaves it reusable, else closed (on every failure too).
    private func exchange(
        _ message: [UInt8], on socket: DeadlineSocket, target: PlainHTTPTarget, limits: HTTP1ResponseParser.Limits,
        deadline: Deadline
    ) -> Result<HTTPResponse, ExchangeFailure> {
        var parser = HTTP1ResponseParser(limits: limits)
        func failure(_ error: HTTPError) -> Result<HTTPResponse, ExchangeFailure> {
            socket.close()
            return .failure(ExchangeFailure(error: error, responseStarted: parser.receivedBytes > 0))
        }
        func timedOut() -> HTTPError {
            HTTPError(
                .timeout,
                "Operation timed out after \(deadline.elapsedMilliseconds) milliseconds with \(parser.receivedBytes) "
                    + "bytes received from \(target.authority)")
        }
        do {
            try socket.sendAll(message, deadline: deadline)
        } catch {
            switch error {
            case .timedOut: return failure(timedOut())
            case .failed(let system): return failure(HTTPError(.transport, "Send failure: \(system.errno)"))
            }
        }
        let outcome = withUnsafeTemporaryAllocation(byteCount: 16 << 10, alignment: 1) {
            buffer -> Result<HTTP1Response, ReadFailure> in
            while true {
                let count: Int
                do throws(SocketFailure) {
                    count = try socket.read(into: buffer, deadline: deadline)
                } catch {
                    return .failure(.socket(error))
                }
                do throws(HTTP1ResponseError) {
                    if count == 0 { return .success(try parser.finish()) }
                    if let response = try parser.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
                        return .success(response)
                    }
                } catch {
                    return .failure(.parse(error))
                }
            }
        }
        switch outcome {
        case .success(let response):
            if response.connectionReusable { idle = (target.authority, socket) } else { socket.close() }
            return .success(
                HTTPResponse(
                    status: response.status, headers: response.fields.map { HTTPHeader($0.name, $0.value) },
                    body: response.body, totalTime: deadline.elapsedSeconds))
        case .failure(.socket(.timedOut)):
            return failure(timedOut())
        case .failure(.socket(.failed(let system))):
            return failure(HTTPError(.transport, "Recv failure: \(system.errno)"))
        case .failure(.parse(.bodyTooLarge)):
            return failure(HTTPError(.bodyTooLarge, "over \(limits.maxBodyBytes) bytes"))
        case .failure(.parse(.truncated)) where parser.receivedBytes == 0:
            return failure(HTTPError(.transport, "Empty reply from server \(target.authority)"))
        case .failure(.parse(let error)):
            return failure(HTTPError(.transport, "\(error) from \(target.authority)"))
        }
    }
}
