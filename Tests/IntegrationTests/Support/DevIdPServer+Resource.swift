import Foundation

/// The development IdP's protected resource controls (`/admin/resource/…`) and what a test reads
/// of the process itself.
extension DevIdPServer {
    /// How a fault's `Retry-After` is written: delta-seconds, or an HTTP-date that far ahead.
    enum RetryAfter {
        case seconds(Int)
        case date(secondsAhead: Int)
    }

    /// Every access token issued so far to `client` (for `subject`) is dead at the resource and
    /// at introspection; later ones live. Answers how many were killed.
    @discardableResult
    func resourceKill(client: String, subject: String? = nil) async throws -> Int {
        var body: [String: Any] = ["client_id": client]
        if let subject { body["subject"] = subject }
        let r = try await call("POST", issuer + "/admin/resource/kill", json: body)
        precondition(r.status == 200, "resource kill refused: \(r.text)")
        return r["killed"] as? Int ?? -1
    }

    /// The next `count` resource calls (with a token of `client`, else any) answer `status`
    /// (429 or 503) with that Retry-After, or none.
    func resourceFault(status: Int, retryAfter: RetryAfter?, count: Int = 1, client: String? = nil) async throws {
        var body: [String: Any] = ["status": status, "count": count]
        switch retryAfter {
        case .seconds(let s)?: body["retry_after"] = s
        case .date(let s)?: body["retry_after"] = s; body["retry_after_form"] = "date"
        case nil: break
        }
        if let client { body["client_id"] = client }
        let r = try await call("POST", issuer + "/admin/resource/fault", json: body)
        precondition(r.status == 200, "resource fault refused: \(r.text)")
    }

    /// Clears the resource fault.
    func resourceFaultClear() async throws {
        _ = try await call("POST", issuer + "/admin/resource/fault", json: ["status": NSNull()])
    }

    /// Every resource answer comes `ms` late (0: on time).
    func resourceDelay(ms: Int) async throws {
        try await resourceSettings(delayMS: ms)
    }

    /// Token refusals as a bare `401` with `WWW-Authenticate: Bearer realm="dev"` (`plain401`),
    /// and the answers' delay. Answers the settings in force.
    @discardableResult
    func resourceSettings(plain401: Bool? = nil, delayMS: Int? = nil) async throws -> [String: Any] {
        var body: [String: Any] = [:]
        if let plain401 { body["plain_401"] = plain401 }
        if let delayMS { body["delay_ms"] = delayMS }
        let r = try await call("POST", issuer + "/admin/resource/settings", json: body)
        precondition(r.status == 200, "resource settings refused: \(r.text)")
        return r.json
    }

    /// The dev-idp process's resident memory (VmRSS of /proc/<pid>/status), in bytes.
    func residentBytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
