import Foundation

/// SignoutJob is a bulk sign-out: the sessions of a tenant that matched `filter`
/// when it was created, revoked in batches by any replica.
public struct SignoutJob: Sendable, Equatable {
    public enum State: String, Sendable { case running, done }

    /// Which sessions: every criterion given must hold; `all` must be said explicitly when no
    /// criterion is given, so that an empty filter never signs everyone out by accident.
    public struct Filter: Sendable, Equatable, Codable {
        public var subject: String?
        public var client: String?
        /// The application's own id of the user (`end_user`), matched exactly. Encoded only
        /// when given, so that a filter without it reads and compares as before it existed.
        public var endUser: String?
        public var createdBefore: Date?
        public var idleSince: Date?
        public var all: Bool

        public init(subject: String? = nil, client: String? = nil, createdBefore: Date? = nil, idleSince: Date? = nil, all: Bool = false,
                    endUser: String? = nil) {
            self.subject = subject
            self.client = client
            self.endUser = endUser
            self.createdBefore = createdBefore
            self.idleSince = idleSince
            self.all = all
        }

        public var isEmpty: Bool { subject == nil && client == nil && endUser == nil && createdBefore == nil && idleSince == nil }

        /// The same filter as a session query (the snapshot selects what the listing would show).
        public var query: SessionQuery {
            SessionQuery(subject: subject, client: client, createdBefore: createdBefore, idleSince: idleSince, endUser: endUser)
        }
    }

    public let id: String
    public let tenant: String
    public let filter: Filter
    public let dryRun: Bool
    public var state: State
    public var total: Int
    /// Sessions revoked here.
    public var revoked: Int
    /// Of those, sessions whose revocation the IdP has not confirmed yet (counted when read).
    public var idpPending: Int
    /// Sessions that could not be revoked.
    public var failed: Int
    public let createdBy: String
    public let createdAt: Date
    public var finishedAt: Date?

    public init(id: String, tenant: String, filter: Filter, dryRun: Bool, state: State, total: Int, revoked: Int = 0, idpPending: Int = 0,
                failed: Int = 0, createdBy: String, createdAt: Date, finishedAt: Date? = nil) {
        self.id = id
        self.tenant = tenant
        self.filter = filter
        self.dryRun = dryRun
        self.state = state
        self.total = total
        self.revoked = revoked
        self.idpPending = idpPending
        self.failed = failed
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.finishedAt = finishedAt
    }
}

/// SignoutItem is one session of a job, claimed for revocation.
public struct SignoutItem: Sendable, Equatable {
    public enum Outcome: String, Sendable { case revoked, failed }

    public let job: String
    public let tenant: String
    public let session: String
    public let client: String
    /// The claim this item was taken with: its outcome is recorded only while that claim holds.
    public let lease: String?

    public init(job: String, tenant: String, session: String, client: String, lease: String? = nil) {
        self.job = job
        self.tenant = tenant
        self.session = session
        self.client = client
        self.lease = lease
    }

    /// An item with its outcome, to record.
    public struct Result: Sendable, Equatable {
        public let item: SignoutItem
        public let outcome: Outcome

        public init(_ item: SignoutItem, _ outcome: Outcome) {
            self.item = item
            self.outcome = outcome
        }
    }
}
