import Foundation

/// CurlHTTP is the tests' client for HTTPS servers whose certificate comes from a test CA: the
/// curl command line with `--cacert`, since FoundationNetworking's URLSession on Linux trusts the
/// system store only. Answers like HTTP's (status, lowercase headers, body); no redirects
/// followed. curl resolves every `*.localhost` name to loopback itself (RFC 6761 §6.3).
struct CurlHTTP: Sendable {
    /// The PEM bundle trusted.
    let ca: String

    func request(_ method: String, _ url: String, json: Any? = nil, body: Data? = nil,
                 headers: [String: String] = [:]) async throws -> HTTP.Reply {
        var args = ["-s", "-S", "-i", "--max-time", "30", "--cacert", ca, "-X", method]
        var input = body
        if let json {
            input = try JSONSerialization.data(withJSONObject: json)
            args += ["-H", "Content-Type: application/json"]
        }
        for (k, v) in headers { args += ["-H", "\(k): \(v)"] }
        if input != nil { args += ["--data-binary", "@-"] }
        let (status, out, err) = try await Self.run(args + [url], stdin: input)
        guard status == 0 else { throw TestEnv.Missing(description: "curl \(method) \(url) failed (\(status)): \(err)") }
        return try Self.parse(out)
    }

    func post(_ url: String, json: Any? = nil) async throws -> HTTP.Reply { try await request("POST", url, json: json) }
    func get(_ url: String) async throws -> HTTP.Reply { try await request("GET", url) }

    /// `curl -i` output: the status line, headers, a blank line, the body.
    static func parse(_ out: Data) throws -> HTTP.Reply {
        let crlf = Data("\r\n\r\n".utf8)
        guard let end = out.range(of: crlf) else { throw TestEnv.Missing(description: "curl printed no headers") }
        let lines = String(decoding: out[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = lines.first, let code = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw TestEnv.Missing(description: "curl printed no status line")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTP.Reply(status: code, headers: headers, data: Data(out[end.upperBound...]))
    }

    /// Runs curl off the cooperative pool (it blocks until curl exits).
    static func run(_ args: [String], stdin: Data?) async throws -> (Int32, Data, String) {
        try await withCheckedThrowingContinuation { done in
            DispatchQueue.global().async {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                p.arguments = args
                let out = Pipe(), err = Pipe(), input = Pipe()
                p.standardOutput = out
                p.standardError = err
                p.standardInput = input
                do { try p.run() } catch { return done.resume(throwing: error) }
                if let stdin { input.fileHandleForWriting.write(stdin) }
                try? input.fileHandleForWriting.close()
                let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                done.resume(returning: (p.terminationStatus, o, String(decoding: e, as: UTF8.self)))
            }
        }
    }
}
