import BrokerOIDC
import Foundation

/// `tokenbroker signout`, for cron: starts a bulk sign-out through the API with an
/// admin key, and with `--wait` follows it to the end — a progress bar on a terminal, one JSON
/// summary line on stdout otherwise. Exit status: 0 when every session was revoked (here and at
/// the IdP; a dry run or a job not waited for: when it was accepted), 3 when some failed or
/// still await the IdP's confirmation `--idp-wait` seconds (default 60) after the job finished,
/// 2 when it could not run (usage, key, broker unreachable).
/// While waiting, an unreachable broker (a restart) is retried for `--timeout` seconds: the job
/// lives in PostgreSQL and continues on any replica.
enum SignoutCommand {
    static let usage = """
        tokenbroker signout --tenant T [--subject S] [--end-user U] [--client C] [--created-before TIME] [--idle-since TIME]
                            [--all] [--dry-run] [--wait] [--timeout SECONDS] [--idp-wait SECONDS] [--idempotency-key K]
          bulk sign-out through the API at --url or TOKENBROKER_URL (default http://127.0.0.1:8080), with an
          admin key from --key-file F or TOKENBROKER_API_KEY (for cron)
        """

    struct Failure: Error { let message: String }

    /// Runs with the options CommandSpec checked.
    static func run(_ a: Arguments) -> Int32 {
        do {
            let env = ProcessInfo.processInfo.environment
            let base = a.value("url") ?? env["TOKENBROKER_URL"] ?? "http://127.0.0.1:8080"
            let key: String
            if let f = a.value("key-file") {
                guard let k = try? String(contentsOfFile: f, encoding: .utf8) else { throw Arguments.Invalid(description: "cannot read --key-file") }
                key = k.trimmingCharacters(in: .whitespacesAndNewlines)
            } else if let k = env["TOKENBROKER_API_KEY"], !k.isEmpty {
                key = k
            } else {
                throw Arguments.Invalid(description: "an admin key is needed: --key-file F or TOKENBROKER_API_KEY\nusage: " + usage)
            }
            let tenant = try a.required("tenant")
            let criteria = ["subject", "end-user", "client", "created-before", "idle-since"]
            if a.flag("all") == criteria.contains(where: { a.value($0) != nil }) {
                throw Arguments.Invalid(description: (a.flag("all") ? "--all cannot be combined with other criteria"
                    : "name at least one of --subject, --end-user, --client, --created-before, --idle-since, or --all for every session of the tenant")
                    + "\nusage: " + usage)
            }
            var body: [String: Any] = ["all": a.flag("all"), "dry_run": a.flag("dry-run")]
            for (option, member) in [("subject", "subject"), ("end-user", "end_user"), ("client", "client"), ("created-before", "created_before"), ("idle-since", "idle_since")] {
                if let v = a.value(option) { body[member] = v }
            }
            let timeout = Double(a.value("timeout") ?? "600") ?? 600
            let idpWait = Double(a.value("idp-wait") ?? "60") ?? 60
            var rng = SystemRandomNumberGenerator()
            let idempotency = a.value("idempotency-key") ?? "cli-" + String(UInt64.random(in: .min ... .max, using: &rng), radix: 16)
            let api = API(base: base, key: key)
            var job = try api.call("POST", "/v1/tenants/\(tenant)/signouts", body: body, headers: ["Idempotency-Key: " + idempotency], expect: 202)
            let bar = ProgressBar()
            if a.flag("wait") {
                var lastContact = Date()
                var finished: Date?
                func settled() -> Bool {
                    guard job["state"] as? String == "done" else { return false }
                    if finished == nil { finished = Date() }
                    return job["idp_pending"] as? Int == 0 || Date().timeIntervalSince(finished!) >= idpWait
                }
                while !settled() {
                    progress(job, bar)
                    Thread.sleep(forTimeInterval: 0.5)
                    do {
                        job = try api.call("GET", "/v1/tenants/\(tenant)/signouts/\(job["job_id"] as? String ?? "")", expect: 200)
                        lastContact = Date()
                    } catch let f as API.Unreachable {
                        guard Date().timeIntervalSince(lastContact) < timeout else { throw Failure(message: f.message) }
                    }
                }
                progress(job, bar)
                bar.finish()
            }
            let summary = try JSONSerialization.data(withJSONObject: job.filter { ["job_id", "state", "dry_run", "total", "revoked", "idp_pending", "failed"].contains($0.key) },
                                                     options: [.sortedKeys])
            print(String(decoding: summary, as: UTF8.self))
            guard a.flag("wait"), !a.flag("dry-run") else { return 0 }
            return (job["failed"] as? Int ?? 1) == 0 && (job["idp_pending"] as? Int ?? 1) == 0 ? 0 : 3
        } catch let e as Arguments.Invalid {
            return CLI.fail(e.description, 2)
        } catch let e as Failure {
            return CLI.fail(e.message, 2)
        } catch let e as API.Unreachable {
            return CLI.fail(e.message, 2)
        } catch {
            return CLI.fail(String(describing: error), 2)
        }
    }

    static func progress(_ job: [String: Any], _ bar: ProgressBar) {
        let done = (job["revoked"] as? Int ?? 0) + (job["idp_pending"] as? Int ?? 0) + (job["failed"] as? Int ?? 0)
        bar.show(done, of: job["total"] as? Int ?? 0, "revoked \(job["revoked"] as? Int ?? 0), failed \(job["failed"] as? Int ?? 0)")
    }

    /// The broker's API over libcurl; error bodies show their code only.
    struct API {
        let base: String
        let key: String
        let http = BlockingHTTP(timeout: 10)

        struct Unreachable: Error { let message: String }

        func call(_ method: String, _ path: String, body: [String: Any]? = nil, headers: [String] = [], expect: Int) throws -> [String: Any] {
            guard let url = URL(string: base + path) else { throw Failure(message: "bad --url") }
            var h = headers + ["Authorization: Bearer " + key, "Accept: application/json"]
            var bytes: [UInt8]?
            if let body {
                h.append("Content-Type: application/json")
                bytes = Array(try JSONSerialization.data(withJSONObject: body))
            }
            let reply: BlockingHTTP.Reply
            do { reply = try http.send(method, url, headers: h, body: bytes) } catch {
                throw Unreachable(message: "the broker at \(base) is unreachable")
            }
            // A body that is not JSON still has its status, which is what the checks below report.
            let json = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any] ?? [:]
            if reply.status >= 500 { throw Unreachable(message: "the broker answered HTTP \(reply.status)") }
            guard reply.status == expect else {
                throw Failure(message: "HTTP \(reply.status) \(json["error"] as? String ?? ""): \(json["message"] as? String ?? "")")
            }
            return json
        }
    }
}
