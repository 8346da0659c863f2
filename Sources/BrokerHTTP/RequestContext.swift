import CMicroHTTPD
import Synchronization

/// RequestContext is one request's state across MHD's calls of the access handler: the body as
/// it arrives, and the response a suspended request's worker hands back. MHD calls the handler
/// for one connection from one thread at a time; `ready` is the only field another thread
/// touches, under its mutex.
final class RequestContext: @unchecked Sendable {
    var headers: [(name: String, value: String)] = []
    var query: [(name: String, value: String)] = []
    var body: [UInt8] = []
    var tooLarge = false
    /// The access handler has seen the headers (its first call for this request is over).
    var started = false
    var dispatched = false
    /// Why the front door refuses the request (FrontDoor), or nil.
    var refusal: String?
    var clientCertificate: String?
    var clientCertificateSubject: String?
    /// The request's id, answered in X-Request-Id (set before the handler runs).
    var requestID = ""
    var certificateRefusal: String?
    let ready = Mutex<HTTPResponse?>(nil)
    /// The request target as sent (kept only when the server has streamed routes).
    var rawTarget: String?
    /// A streamed route's request (Router.addStream), from its first call on.
    var stream: StreamedExchange?
}

/// MHDConnection carries a connection pointer to the worker that resumes it. MHD_resume_connection
/// may be called from any thread.
struct MHDConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}
