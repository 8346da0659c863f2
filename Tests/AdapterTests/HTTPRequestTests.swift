import BrokerHTTP
import Foundation
import Testing

/// HTTPRequest keeps its fields in a shared box: it must still behave as a value.
@Suite("HTTP request value")
struct HTTPRequestTests {
    @Test("a changed copy leaves the original as it was, field by field, also across threads")
    func copiesAreValues() async {
        var a = HTTPRequest(method: "POST", path: "/p", query: [("q", "1")], headers: [("authorization", "Bearer x")], body: [1, 2], requestID: "r")
        a.parameters = ["id": "one"]
        var b = a
        b.parameters["id"] = "two"
        b.bodyTooLarge = true
        b.refusal = "no"
        b.clientCertificateSHA256 = "ab"
        b.certificateRefusal = "bad"
        b.traceSeed = 7
        #expect(a[param: "id"] == "one" && !a.bodyTooLarge && a.refusal == nil && a.clientCertificateSHA256 == nil)
        #expect(a.certificateRefusal == nil && a.traceSeed == 0)
        #expect(b[param: "id"] == "two" && b.bodyTooLarge && b.refusal == "no" && b.traceSeed == 7)
        #expect(b.method == "POST" && b.path == "/p" && b.queryValue("q") == "1" && b.header("authorization") == "Bearer x" && b.body == [1, 2])
        // Copies changed on many threads at once each see only their own change.
        let shared = a
        let seen = await withTaskGroup(of: Bool.self) { g in
            for i in 0..<64 {
                g.addTask {
                    var mine = shared
                    mine.parameters["id"] = String(i)
                    mine.traceSeed = UInt64(i)
                    return mine[param: "id"] == String(i) && mine.traceSeed == UInt64(i) && shared[param: "id"] == "one"
                }
            }
            return await g.reduce(true) { $0 && $1 }
        }
        #expect(seen && a[param: "id"] == "one")
    }
}
