import Foundation

/// BrokerServer is a running `tokenbroker serve` replica.
final class BrokerServer: @unchecked Sendable {
    let port: UInt16
    let process: ManagedProcess
    var url: String { "http://127.0.0.1:\(port)" }

    /// A replica on `port` (a restart of one that died), else on a free port.
    init(env: [String: String], name: String = "broker", port: UInt16? = nil) async throws {
        self.port = port ?? TestEnv.freePort()
        var e = env
        e["TOKENBROKER_LISTEN"] = "127.0.0.1:\(self.port)"
        process = try ManagedProcess("tokenbroker", ["serve"], env: e, logName: TestEnv.uniqueName(name))
        try await waitReady(url + "/healthz", process)
    }

    func stop(signal: Int32 = SIGTERM) { process.stop(signal: signal) }

    /// The replica's resident set now, in bytes.
    func residentBytes() -> Int { process.residentBytes() }
}
