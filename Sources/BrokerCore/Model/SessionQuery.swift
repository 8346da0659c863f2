import Foundation

/// SessionQuery filters a tenant's sessions for the admin listing, newest first,
/// one page at a time after `after` (keyset pagination: stable under inserts, no offsets).
public struct SessionQuery: Sendable, Equatable {
    public var subject: String?
    public var client: String?
    /// The application's own id of the user (`end_user`), matched exactly.
    public var endUser: String?
    /// The IdP session id (`sid`) the session was signed in with.
    public var sid: String?
    public var state: SessionState?
    public var createdBefore: Date?
    public var createdAfter: Date?
    /// Sessions not used since this instant (never used: not since they were created).
    public var idleSince: Date?
    public var limit: Int
    public var after: Cursor?

    /// The position after the last session of a page: its creation instant in microseconds
    /// since the epoch (exactly as stored: a Double would lose the last digit) and its id.
    public struct Cursor: Sendable, Equatable {
        public let createdMicros: Int64
        public let id: String

        public init(createdMicros: Int64, id: String) {
            self.createdMicros = createdMicros
            self.id = id
        }

        /// Opaque text form: base64url of `<microseconds>:<id>`.
        public var text: String { Base64URL.encode(Array("\(createdMicros):\(id)".utf8)) }

        public init?(text: String) {
            guard text.utf8.count <= 200, let raw = Base64URL.decode(text), let s = String(bytes: raw, encoding: .utf8),
                  let colon = s.firstIndex(of: ":"), let micros = Int64(s[..<colon]), s.index(after: colon) < s.endIndex else { return nil }
            self.init(createdMicros: micros, id: String(s[s.index(after: colon)...]))
        }
    }

    public init(subject: String? = nil, client: String? = nil, sid: String? = nil, state: SessionState? = nil, createdBefore: Date? = nil,
                createdAfter: Date? = nil, idleSince: Date? = nil, limit: Int = 100, after: Cursor? = nil, endUser: String? = nil) {
        self.subject = subject
        self.client = client
        self.endUser = endUser
        self.sid = sid
        self.state = state
        self.createdBefore = createdBefore
        self.createdAfter = createdAfter
        self.idleSince = idleSince
        self.limit = limit
        self.after = after
    }
}
