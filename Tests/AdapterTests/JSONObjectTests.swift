import BrokerCore
import BrokerJSON
import Testing

@Suite("Request bodies")
struct JSONObjectTests {
    @Test("malformed JSON, non-objects, duplicate keys and NUL in strings are invalid_json")
    func invalidJSON() {
        for body in ["{", "[1]", "\"x\"", "{\"a\":1,\"a\":2}", "{\"a\":}", "nul", "{\"s\":\"a\\u0000b\"}"] {
            do {
                _ = try JSONObject.parse(Array(body.utf8))
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.code == "invalid_json", "\(body)")
            }
        }
    }

    @Test("wrong member types are invalid_request naming the member")
    func wrongTypes() throws {
        let o = try JSONObject.parse(Array("{\"min_ttl\":\"60\",\"items\":[{\"x\":1},2],\"ok\":true,\"n\":null}".utf8))
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'min_ttl' must be an integer")) { try o.int("min_ttl") }
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'items' must be an array of objects")) { try o.objects("items") }
        #expect(try o.bool("ok") == true)
        #expect(try o.string("n") == nil && o.string("absent") == nil)
        #expect(try JSONObject.parse([]).int("x") == nil)
    }

    @Test("strings keep their unicode and escapes")
    func strings() throws {
        let o = try JSONObject.parse(Array("{\"s\":\"a\\\"b\\u00e9c\"}".utf8))
        #expect(try o.string("s") == "a\"béc")
    }
}
