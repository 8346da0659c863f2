@testable import BrokerApp
import BrokerCore
import Testing

/// How a thrown error becomes the answer, and what the request's log line keeps of it.
@Suite("Errors as answers")
struct ErrorResponseTests {
    struct Surprise: Error, CustomStringConvertible { var description: String { "a surprise" } }

    @Test("an error that is not a BrokerError: 500 internal_error, its cause on the request's log line and never in the body")
    func unexpectedErrorKeepsItsCause() {
        let r = ErrorResponse.response(to: Surprise(), requestID: "req-1")
        #expect(r.status == 500)
        let body = String(decoding: r.body, as: UTF8.self)
        #expect(body.contains("internal_error") && !body.contains("surprise"))
        #expect(r.logFields.first { $0.0 == "cause" }?.1 == "AdapterTests.ErrorResponseTests.Surprise: a surprise")
    }

    @Test("a BrokerError is answered as itself, with no cause field")
    func brokerErrorAsItself() {
        let r = ErrorResponse.response(to: BrokerError.storeUnavailable, requestID: "req-2")
        #expect(r.status == 503 && !r.logFields.contains { $0.0 == "cause" })
    }

    @Test("store_unavailable is 503 with a short Retry-After: a database failover lasts seconds")
    func storeUnavailableSaysWhenToAskAgain() {
        let r = ErrorResponse.response(BrokerError.storeUnavailable, requestID: "req-3")
        #expect(r.status == 503)
        #expect(r.headers.first { $0.0 == "Retry-After" }?.1 == "2")
        #expect(ErrorResponse.retryAfter(.storeUnavailable) == 2)
    }
}
