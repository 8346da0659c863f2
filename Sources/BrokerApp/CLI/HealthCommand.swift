import BrokerOIDC
import Foundation

/// HealthCommand is `tokenbroker health`: one request to this replica's ops listener, for
/// container health checks (the image has no curl). Needs no database and no keys.
enum HealthCommand {
    static func run(_ a: Arguments) -> Int32 {
        let env = ProcessInfo.processInfo.environment
        let listen = env["TOKENBROKER_OPS_LISTEN"].flatMap { $0.isEmpty ? nil : $0 } ?? env["TOKENBROKER_LISTEN"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "127.0.0.1:8080"
        // A wildcard listen address is reached on loopback.
        let target = listen.hasPrefix("0.0.0.0:") ? "127.0.0.1" + listen.dropFirst("0.0.0.0".count) : Substring(listen)
        let base = a.value("url") ?? "http://\(target)"
        guard let url = URL(string: base + (a.flag("ready") ? "/readyz" : "/healthz")) else {
            return CLI.fail("--url must be a URL", 2)
        }
        do {
            let reply = try BlockingHTTP(timeout: 5).send("GET", url, headers: ["Accept: application/json"])
            print(String(decoding: reply.body, as: UTF8.self))
            return reply.status == 200 ? 0 : 1
        } catch {
            return CLI.fail("\(url.absoluteString): no answer (\(error))", 1)
        }
    }
}
