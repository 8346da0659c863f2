@testable import BrokerApp
import Testing

@Suite("Log lines stay one line for every reader")
struct LogLineTests {
    @Test("C1 controls (NEL) and the Unicode line and paragraph separators are written as \\u escapes; other text is untouched")
    func lineBreakersEscaped() {
        let given = Array("{\"path\":\"/p/a\u{85}b\u{2028}c\u{2029}d\u{9F}é€\"}".utf8)
        let written = String(decoding: Logger.oneLine(given), as: UTF8.self)
        #expect(written == "{\"path\":\"/p/a\\u0085b\\u2028c\\u2029d\\u009fé€\"}")
        // What Python's splitlines (log shippers, the suite's own log check) would split on is gone.
        #expect(!written.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 })
        let plain = Array("{\"path\":\"/plain/é\"}".utf8)
        #expect(Logger.oneLine(plain) == plain)
    }
}
