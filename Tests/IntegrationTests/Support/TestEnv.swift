import Foundation
import Synchronization

/// TestEnv is what `make test` provides to the integration tests: the database, the built
/// binaries, a folder for process logs, and a ledger of every secret the tests saw (checked
/// against all logs and a database dump once the run ends, by scripts/test.sh).
enum TestEnv {
    struct Missing: Error, CustomStringConvertible { let description: String }

    static func databaseURL() throws -> String {
        guard let u = ProcessInfo.processInfo.environment["DATABASE_URL"], !u.isEmpty else {
            throw Missing(description: "DATABASE_URL is not set: run the tests through `make test`")
        }
        return u
    }

    /// The test database's URL with another database name.
    static func databaseURL(named db: String) throws -> String {
        let url = try databaseURL()
        guard let at = url.range(of: "@/") else { throw Missing(description: "DATABASE_URL is not of the form postgresql://user@/name?host=…") }
        let rest = url[at.upperBound...]
        let end = rest.firstIndex(of: "?") ?? rest.endIndex
        return String(url[..<at.upperBound]) + db + String(rest[end...])
    }

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var binDir: URL {
        if let d = ProcessInfo.processInfo.environment["TOKENBROKER_BIN_DIR"] { return URL(fileURLWithPath: d) }
        return root.appendingPathComponent(".build/debug")
    }

    static var logDir: URL {
        let d = ProcessInfo.processInfo.environment["TOKENBROKER_TEST_LOGS"].map { URL(fileURLWithPath: $0) }
            ?? root.appendingPathComponent(".run/test-logs")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    private static let ledgerLock = NSLock()

    /// Records a secret for the end-of-run scan of logs and database.
    static func secret(_ s: String) {
        guard s.count >= 12 else { return }
        ledgerLock.withLock {
            let url = logDir.appendingPathComponent("secrets.ledger")
            if !FileManager.default.fileExists(atPath: url.path) { FileManager.default.createFile(atPath: url.path, contents: nil) }
            guard let h = try? FileHandle(forWritingTo: url) else { return }
            h.seekToEndOfFile()
            h.write(Data((s + "\n").utf8))
            try? h.close()
        }
    }

    static func uniqueName(_ prefix: String) -> String { prefix + "-" + UUID().uuidString.prefix(8).lowercased() }

    /// A port that was free a moment ago.
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return UInt16(bigEndian: addr.sin_port)
    }
}
