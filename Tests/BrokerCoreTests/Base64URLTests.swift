import BrokerCore
import Foundation
import Testing

@Suite("Base64url (RFC 4648 §5, unpadded)")
struct Base64URLTests {
    @Test("round trip for every length, same text as Foundation's base64 with the URL alphabet")
    func roundTrip() {
        for n in 0..<70 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255) }
            let text = Base64URL.encode(bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(text == foundation)
            #expect(Base64URL.decode(text) == bytes)
        }
    }

    @Test("padding, the standard alphabet, impossible lengths and non-canonical tails are refused")
    func refusals() {
        #expect(Base64URL.decode("QQ==") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("QUJDR") == nil)
        #expect(Base64URL.decode("QR") == nil)      // "QQ" is canonical for "A"; "QR" sets unused bits
        #expect(Base64URL.decode("QQ") == [65])
    }
}
