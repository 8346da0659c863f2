import Foundation

/// ProgressBar draws `[####    ] done/total detail` over itself on stderr when stderr is a
/// terminal, and nothing otherwise (stdout keeps only the command's JSON summary).
struct ProgressBar {
    let enabled = isatty(STDERR_FILENO) == 1

    func show(_ done: Int, of total: Int, _ detail: String = "") {
        guard enabled else { return }
        let width = 40, filled = total <= 0 ? width : min(width, width * done / total)
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] \(done)/\(total)"
            + (detail.isEmpty ? "" : " " + detail)
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the bar's line.
    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
