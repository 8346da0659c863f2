import Foundation

/// Patroni is the two-node cluster `make test` starts (scripts/patroni.sh): its multi-host URL,
/// and the control script's commands (which node is primary, kill it, freeze its WAL shipping).
enum Patroni {
    static var url: String? { ProcessInfo.processInfo.environment["TOKENBROKER_TEST_PATRONI_URL"] }
    static var control: String { ProcessInfo.processInfo.environment["TOKENBROKER_TEST_PATRONI_CONTROL"]
        ?? TestEnv.root.appendingPathComponent("scripts/patroni.sh").path }

    struct Failed: Error, CustomStringConvertible { let description: String }

    /// Runs `scripts/patroni.sh args…` and returns what it printed; throws when it fails.
    @discardableResult
    static func run(_ args: String...) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = [control] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let d = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw Failed(description: "patroni.sh \(args.joined(separator: " ")) exited \(p.terminationStatus)") }
        return String(decoding: d, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The URL of one node (its port), bypassing the multi-host choice.
    static func nodeURL(port: String) throws -> String {
        guard let u = url, let at = u.range(of: "@"), let slash = u.range(of: "/", range: at.upperBound..<u.endIndex),
              let q = u.range(of: "?", range: slash.upperBound..<u.endIndex) else { throw Failed(description: "TOKENBROKER_TEST_PATRONI_URL is not multi-host") }
        return String(u[..<at.upperBound]) + "127.0.0.1:" + port + String(u[slash.lowerBound..<q.lowerBound]) + "?connect_timeout=1"
    }

    /// Whether the node on `port` accepts writes now (promoted, or still the primary).
    static func acceptsWrites(port: String) -> Bool {
        guard let u = try? nodeURL(port: port) else { return false }
        return (try? runPSQL("SELECT pg_is_in_recovery()", url: u).trimmingCharacters(in: .whitespacesAndNewlines)) == "f"
    }
}
