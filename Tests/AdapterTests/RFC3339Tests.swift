@testable import BrokerApp
import Foundation
import Testing

/// RFC3339 computes calendar fields itself (glibc's gmtime_r locks): they must be gmtime_r's.
@Suite("RFC 3339 timestamps")
struct RFC3339Tests {
    func libc(_ t: Int) -> RFC3339.Fields {
        var v = time_t(t)
        var tm = tm()
        gmtime_r(&v, &tm)
        return RFC3339.Fields(year: Int(tm.tm_year) + 1900, month: Int(tm.tm_mon) + 1, day: Int(tm.tm_mday),
                              hour: Int(tm.tm_hour), minute: Int(tm.tm_min), second: Int(tm.tm_sec))
    }

    @Test("the fields equal gmtime_r's: epoch edges, leap days, centuries, before 1970, and 20,000 random instants")
    func fieldsMatchLibc() {
        let edges = [0, -1, 1, 86_399, 86_400, -86_400, -86_401, 951_782_400, 951_868_799, 4_107_542_400, 4_102_444_799,
                     -62_135_596_800, 253_402_300_799, 1_709_164_800, 68_169_600, -2_208_988_800]
        for t in edges { #expect(RFC3339.fields(t) == libc(t), "t = \(t)") }
        var rng = SystemRandomNumberGenerator()
        var mismatches = 0
        for _ in 0..<20_000 {
            let t = Int.random(in: -62_135_596_800...253_402_300_799, using: &rng)
            if RFC3339.fields(t) != libc(t) { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test("written quoted, to the millisecond rounded down; formatted without quotes")
    func written() {
        var bytes: [UInt8] = []
        RFC3339.write(Date(timeIntervalSince1970: 951_782_400.9996), into: &bytes, millis: true)
        #expect(String(decoding: bytes, as: UTF8.self) == "\"2000-02-29T00:00:00.999Z\"")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_796_190_208)) == "2026-12-02T05:43:28Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -1.5), fractional: true) == "1969-12-31T23:59:58.500Z")
    }
}
