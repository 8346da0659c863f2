import Foundation

/// ManagedProcess runs one of the project's executables with its stdout and stderr in a log
/// file, and stops it when the test ends (SIGTERM, or SIGKILL on request).
final class ManagedProcess: @unchecked Sendable {
    let process = Process()
    let log: URL

    init(_ executable: String, _ args: [String], env: [String: String], logName: String) throws {
        log = TestEnv.logDir.appendingPathComponent(logName + ".log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = TestEnv.binDir.appendingPathComponent(executable)
        process.arguments = args
        var e = ProcessInfo.processInfo.environment
        for (k, v) in env { e[k] = v }
        process.environment = e
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    func stop(signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }

    deinit { stop(signal: SIGKILL) }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
}

/// Runs a command of the project to completion and returns its exit status, stdout and stderr.
func runCommand(_ executable: String, _ args: [String], env: [String: String]) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = TestEnv.binDir.appendingPathComponent(executable)
    p.arguments = args
    var e = ProcessInfo.processInfo.environment
    for (k, v) in env { e[k] = v }
    p.environment = e
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile(), r = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: r, as: UTF8.self))
}

extension ManagedProcess {
    /// The process's resident set now (VmRSS), in bytes; 0 when it cannot be read.
    func residentBytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
