import BrokerCore
import Testing

/// RFC 6749 §5.1: `token_type` is case-insensitive; it is handed out in one spelling, since
/// workers compare it exactly.
@Suite("token_type is handed out as Bearer or DPoP, whatever the IdP's case")
struct TokenTypeSpellingTests {
    @Test("glewlwyd's bearer is Bearer, dpop is DPoP; an unknown type is none")
    func canonical() {
        #expect(TokenType(named: "bearer")?.rawValue == "Bearer" && TokenType(named: "BEARER")?.rawValue == "Bearer")
        #expect(TokenType(named: "dpop")?.rawValue == "DPoP" && TokenType(named: "DPoP")?.rawValue == "DPoP")
        #expect(TokenType(named: "mac") == nil)
    }
}
