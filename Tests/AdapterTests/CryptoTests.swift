import BrokerCore
import BrokerCrypto
import Foundation
import Testing

@Suite("Sealing and hashing")
struct CryptoTests {
    let keys = try! SealingKeys.parse(SealingKeys.generate(id: "k1"))

    @Test("sealed values open with the same context and differ every time")
    func roundTrip() throws {
        let s = AESGCMSealer(keys: keys)
        let a = try s.seal("refresh-token", context: "sessions/t/s/refresh_token")
        let b = try s.seal("refresh-token", context: "sessions/t/s/refresh_token")
        #expect(a != b)
        #expect(try s.open(a, context: "sessions/t/s/refresh_token") == "refresh-token")
    }

    @Test("a value moved to another tenant, row or column, or tampered with, does not open")
    func bindingAndTamper() throws {
        let s = AESGCMSealer(keys: keys)
        var sealed = try s.seal("secret", context: "sessions/t1/s/refresh_token")
        #expect(throws: SealError.self) { try s.open(sealed, context: "sessions/t2/s/refresh_token") }
        #expect(throws: SealError.self) { try s.open(sealed, context: "sessions/t1/s/access_token") }
        sealed[sealed.count - 20] ^= 1
        #expect(throws: SealError.self) { try s.open(sealed, context: "sessions/t1/s/refresh_token") }
    }

    @Test("after rotation the old key still opens what it sealed; an unknown key id does not")
    func rotation() throws {
        let old = try SealingKeys.generate(id: "old")
        let sealed = try AESGCMSealer(keys: try SealingKeys.parse(old)).seal("v", context: "c")
        let rotated = AESGCMSealer(keys: try SealingKeys.parse(SealingKeys.generate(id: "new") + "," + old))
        #expect(try rotated.open(sealed, context: "c") == "v")
        #expect(try rotated.seal("v", context: "c")[2...4].elementsEqual("new".utf8))
        #expect(throws: SealError.self) { try AESGCMSealer(keys: keys).open(sealed, context: "c") }
    }

    @Test("a decrypt-only key opens but never seals: the current key is the first entry that is not")
    func decryptOnly() throws {
        let next = try SealingKeys.generate(id: "next")
        let early = AESGCMSealer(keys: try SealingKeys.parse(next + ":decrypt-only," + SealingKeys.generate(id: "now")))
        #expect(early.sealingKeyID == "now")
        let sealedUnderNext = try AESGCMSealer(keys: try SealingKeys.parse(next)).seal("v", context: "c")
        #expect(try early.open(sealedUnderNext, context: "c") == "v")
        #expect(try early.seal("v", context: "c")[2...4].elementsEqual("now".utf8))
        #expect(throws: SealError.self) { try SealingKeys.parse(next + ":decrypt-only") }
        #expect(throws: SealError.self) { try SealingKeys.parse(next + ":decrypt") }
    }

    @Test("malformed keyrings are refused with a message that names no key")
    func keyringErrors() throws {
        for text in ["", "k1", "k1:c2hvcnQ=", "k1:\(Data(count: 32).base64EncodedString()),k1:\(Data(count: 32).base64EncodedString())"] {
            #expect(throws: SealError.self) { try SealingKeys.parse(text) }
        }
    }

    @Test("secret hashes compare equal only for equal secrets")
    func hashes() throws {
        let h = SHA256SecretHasher()
        #expect(try h.equal(h.hash("a"), h.hash("a")))
        #expect(try !h.equal(h.hash("a"), h.hash("b")))
        #expect(!h.equal([], []))
        #expect(try SHA256.hash("abc").map { String(format: "%02x", $0) }.joined() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("Standard Webhooks: the specification's test vector signs and verifies with HMAC-SHA256; a changed byte does not")
    func standardWebhooksVector() throws {
        let mac: StandardWebhooks.MAC = { try HMACSHA256.mac(key: $0, $1) }
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id = "msg_p5jXN8AQM9LWM0D4loKWxJek", body = #"{"test": 2432232314}"#
        let sig = try StandardWebhooks.signature(id: id, timestamp: 1_614_265_330, body: body, secrets: [secret], mac: mac)
        #expect(sig == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let then = Date(timeIntervalSince1970: 1_614_265_330)
        #expect(StandardWebhooks.verify(id: id, timestamp: "1614265330", header: "v1,bogus " + sig, body: body, secret: secret, now: then, mac: mac))
        #expect(!StandardWebhooks.verify(id: id, timestamp: "1614265330", header: sig, body: body + " ", secret: secret, now: then, mac: mac))
        #expect(!StandardWebhooks.verify(id: id, timestamp: "1614265330", header: sig, body: body, secret: secret, now: then.addingTimeInterval(301), mac: mac))
    }
}
