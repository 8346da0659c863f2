import Foundation

/// BrokerServer is a running `tokenbroker serve` replica.
final class BrokerServer: @unchecked Sendable {
    let port: UInt16
    let process: ManagedProcess
    var url: String { "http://127.0.0.1:\(port)" }

    init(env: [String: String], name: String = "broker") async throws {
        port = TestEnv.freePort()
        var e = env
        e["TOKENBROKER_LISTEN"] = "127.0.0.1:\(port)"
        process = try ManagedProcess("tokenbroker", ["serve"], env: e, logName: TestEnv.uniqueName(name))
        try await waitReady(url + "/healthz", process)
    }

    func stop(signal: Int32 = SIGTERM) { process.stop(signal: signal) }
}
