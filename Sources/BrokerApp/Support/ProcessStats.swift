import Foundation

/// ProcessStats reads this process's CPU time, resident memory and open descriptors from
/// getrusage and /proc (Linux), for the `process_*` metrics Prometheus clients conventionally export.
struct ProcessStats {
    var cpuSeconds: Double
    var residentBytes: Int
    var openFDs: Int

    /// When this process started (first use, which `serve` makes at start).
    static let started = Date()

    static func now() -> ProcessStats {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        // /proc/self/statm: size resident … in pages. Without /proc the gauges read 0 rather
        // than fail the /metrics answer they are part of.
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        return ProcessStats(cpuSeconds: cpu, residentBytes: pages * Int(sysconf(Int32(_SC_PAGESIZE))), openFDs: fds)
    }
}
