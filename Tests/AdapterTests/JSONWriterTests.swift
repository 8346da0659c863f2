@testable import BrokerApp
import Foundation
import Testing

/// JSONWriter's word-at-a-time scan must say exactly what a byte-by-byte one says.
@Suite("JSON writer")
struct JSONWriterTests {
    func naive(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c } }

    @Test("every byte value at every position of 1...19 bytes, beside every other byte: the scan agrees with a per-byte check")
    func scanAgrees() {
        var disagreements = 0
        for length in 1...19 {
            for position in 0..<length {
                for b in 0...255 {
                    for filler: UInt8 in [0x41, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0x20] {
                        var bytes = [UInt8](repeating: filler, count: length)
                        bytes[position] = UInt8(b)
                        if bytes.withUnsafeBufferPointer({ JSONWriter.needsEscaping($0) }) != naive(bytes) { disagreements += 1 }
                    }
                }
            }
        }
        #expect(disagreements == 0)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0x1e...0x7f, using: &rng) }
            #expect(bytes.withUnsafeBufferPointer { JSONWriter.needsEscaping($0) } == naive(bytes))
        }
    }

    @Test("strings are escaped per RFC 8259 §7 and parse back; plain ones are copied whole")
    func escaped() throws {
        let samples = ["eyJhbGciOiJFUzI1NiJ9.e30.sig-_", "a\"b\\c\nd\re\tf\u{01}g\u{1f}", "é ✓ \u{7f}", ""]
        for s in samples {
            var w = JSONWriter()
            w.beginArray()
            w.string(s)
            w.endArray()
            let back = try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String]
            #expect(back == [s])
        }
        var w = JSONWriter()
        w.string("a\"\u{01}")
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""a\"\u0001""#)
    }
}
