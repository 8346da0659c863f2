import BrokerCore
import BrokerJSON
import Testing

@Suite("Request bodies")
struct JSONObjectTests {
    @Test("malformed JSON, non-objects, duplicate keys and NUL in strings are invalid_json")
    func invalidJSON() {
        // Seventeen names and a repeat: past the small objects' pairwise check.
        let many = "{" + (0..<17).map { "\"k\($0)\":1" }.joined(separator: ",") + ",\"k3\":2}"
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        for body in ["{", "[1]", "\"x\"", "{\"a\":1,\"a\":2}", "{\"a\":}", "nul", "{\"s\":\"a\\u0000b\"}", "{\"a\\u0000\":1}",
                     "{\"o\":{\"b\":1,\"b\":1}}", "{\"l\":[{\"c\":1,\"c\":2}]}", many, "{\"d\":\(deep)}",
                     "{\"n\":123456789012345678901234567890}", "{\"x\":1} {}", "{\"a\":01}", "{'a':1}"] {
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

    @Test("bytes that are not UTF-8 are invalid_json")
    func notUTF8() {
        for body: [UInt8] in [[0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D]] {
            #expect(throws: BrokerError.badRequest(code: "invalid_json", message: "the body is not valid JSON")) { try JSONObject.parse(body) }
        }
    }

    @Test("integers are exact 64-bit values; a fraction or a bigger one is not an integer")
    func integers() throws {
        let o = try JSONObject.parse(Array("{\"a\":9223372036854775807,\"b\":-1,\"c\":1.5,\"d\":18446744073709551615,\"e\":1e2}".utf8))
        #expect(try o.int("a") == Int.max && o.int("b") == -1)
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'c' must be an integer")) { try o.int("c") }
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'d' must be an integer")) { try o.int("d") }
        #expect(try o.double("c") == 1.5 && o.double("d") == 18446744073709551616 && o.double("e") == 100)
    }

    @Test("a member of a nested object or of an array's item is named by its path")
    func paths() throws {
        let o = try JSONObject.parse(Array("{\"x\":{\"y\":1},\"items\":[{},{\"id\":2}]}".utf8))
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'x.y' must be a string")) { try o.object("x")?.string("y") }
        let items = try #require(try o.objects("items"))
        #expect(items.count == 2)
        #expect(throws: BrokerError.badRequest(code: "invalid_request", message: "'items[1].id' must be a string")) { try items[1].string("id") }
        #expect(try o.objectOrObjects("x")?.count == 1 && o.strings("absent") == nil)
    }

    @Test("strings keep their unicode and escapes")
    func strings() throws {
        let o = try JSONObject.parse(Array("{\"s\":\"a\\\"b\\u00e9c\"}".utf8))
        #expect(try o.string("s") == "a\"béc")
    }
}
