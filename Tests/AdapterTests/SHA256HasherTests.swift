import BrokerCrypto
import Foundation
import Testing

/// SHA256Hasher: bytes given in pieces hash as the same bytes given whole (FIPS 180-4).
@Suite("SHA-256 in pieces")
struct SHA256HasherTests {
    @Test("the FIPS 180-4 vector \"abc\" fed a byte at a time, and 1 MB in uneven pieces, hash as when whole")
    func piecesHashAsWhole() throws {
        let abc = try SHA256Hasher()
        for b in Array("abc".utf8) { try [b].withUnsafeBytes { try abc.update($0) } }
        #expect(try abc.finish().map { String(format: "%02x", $0) }.joined() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")

        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let h = try SHA256Hasher()
        var at = 0, piece = 1
        while at < bytes.count {
            let end = min(bytes.count, at + piece)
            try bytes[at..<end].withUnsafeBytes { try h.update($0) }
            at = end
            piece = piece * 3 + 7
        }
        #expect(try h.finish() == SHA256.hash(bytes))
    }

    @Test("nothing at all hashes as the empty string")
    func empty() throws {
        #expect(try SHA256Hasher().finish() == SHA256.hash([UInt8]()))
    }
}
