import BrokerCore
import Foundation
import Testing

@Suite("Access-token expiry from a JWT's exp (RFC 9068), only ever shortened")
struct AccessTokenExpiryTests {
    let computed = Date(timeIntervalSince1970: 1_800_003_600)

    func jwt(_ payload: String, header: String = #"{"alg":"ES256","typ":"at+jwt"}"#, signature: String = "c2ln") -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "." + signature
    }

    @Test("an exp earlier than the computed expiry wins; a later one does not extend it")
    func shortensOnly() {
        #expect(AccessTokenExpiry.clamp(computed, token: jwt(#"{"sub":"a","exp":1800003599}"#)) == Date(timeIntervalSince1970: 1_800_003_599))
        #expect(AccessTokenExpiry.clamp(computed, token: jwt(#"{"sub":"a","exp":1800007200}"#)) == computed)
        #expect(AccessTokenExpiry.clamp(computed, token: jwt(#"{"exp":1800003000.5}"#)) == Date(timeIntervalSince1970: 1_800_003_000.5))
    }

    @Test("what is not a JWT with a numeric exp leaves the computed expiry as it is")
    func notAJWT() {
        for token in ["opaque-access-token", "a.b", jwt(#"{"exp":1}"#) + ".x", jwt(#"{"exp":"1"}"#), jwt(#"{"exp":true}"#), jwt(#"{"exp":null}"#), jwt(#"["exp",1]"#),
                      jwt("not json"), "e30.!!!.c2ln", jwt(#"{"sub":"a"}"#), jwt(#"{"exp":1,"pad":""# + String(repeating: "a", count: 20_000) + #""}"#)] {
            #expect(AccessTokenExpiry.clamp(computed, token: token) == computed, "\(token.prefix(60))")
        }
    }

    @Test("the payload is read whatever the header says: the header is not decoded at all")
    func headerIgnored() {
        #expect(AccessTokenExpiry.clamp(computed, token: "!!!." + Base64URL.encode(Array(#"{"exp":1800000000}"#.utf8)) + ".c2ln")
                == Date(timeIntervalSince1970: 1_800_000_000))
    }
}
