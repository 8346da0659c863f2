import BrokerCore
import Testing

/// The rule for `end_user` (EndUser): 1...255 bytes of printable text, compared as given.
@Suite("end_user values")
struct EndUserTests {
    @Test("printable text of 1...255 bytes is an end user id, inner spaces and any script included", arguments: [
        "42", "user_7f3a", "alice@example.com", "U0123ABCD", "tenant:42/user 7", "Zoë Ñúñez", "ユーザー", "a|b", String(repeating: "x", count: 255),
        String(repeating: "é", count: 127),
    ])
    func valid(_ s: String) { #expect(EndUser.isValid(s)) }

    @Test("empty, over 255 bytes, control or format characters, separators, white space at either end are refused", arguments: [
        "", String(repeating: "x", count: 256), String(repeating: "é", count: 128), "a\u{0}b", "a\nb", "tab\there", "del\u{7F}",
        "c1\u{85}", "zero\u{200B}width", "bidi\u{202E}txt", "bom\u{FEFF}", "line\u{2028}sep", "para\u{2029}sep", " lead", "trail ",
        "\u{00A0}nbsp", "ideo\u{3000}",
    ])
    func invalid(_ s: String) {
        #expect(!EndUser.isValid(s))
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: EndUser.rule)) { try EndUser.checked(s) }
    }

    @Test("absent is no end user, not an error")
    func absent() throws { #expect(try EndUser.checked(nil) == nil) }
}
