import Foundation
import BrokerCore

/// SessionCache holds recently used sessions, tokens unsealed, so that a cached token is handed
/// out without touching PostgreSQL. An entry is trusted for `maxAge` at most: changes from other
/// replicas arrive through the change feed, and the age bound is the safety net when one is lost.
///
/// Thread-safety: every method may be called from any thread.
public final class SessionCache: Sendable {
    /// A cached session, shared rather than copied: a lookup on the hot path costs one
    /// reference count, not one for every string of the session.
    public final class Entry: Sendable {
        public let session: Session
        let loadedAt: Date
        /// Its plain token document as last rendered: a hand-out renders it once a second.
        public let document = TokenDocumentMemo()

        init(session: Session, loadedAt: Date) {
            self.session = session
            self.loadedAt = loadedAt
        }
    }

    /// A lookup at a client: by the provider's subject, or by the application's end user id
    /// (the same text names different users in each).
    private struct SubjectKey: Hashable {
        let tenant: String, client: String, subject: String
        var endUser = false
    }

    // Read on every hand-out, changed on loads and notices: readers share the lock.
    private let entries = ReadMostly<[SessionKey: Entry]>([:])
    private let subjects = ReadMostly<[SubjectKey: String]>([:])
    private let configuredMaxAge: TimeInterval
    private let capacity: Int
    private let trust: CacheTrust
    /// The configured maximum age while the change feed is trusted, else 0 (CacheTrust).
    private var maxAge: TimeInterval { trust.maxAge(configuredMaxAge) }

    public init(maxAge: TimeInterval, capacity: Int, trust: CacheTrust = CacheTrust()) {
        configuredMaxAge = maxAge
        self.capacity = capacity
        self.trust = trust
    }

    /// The cached session if it was loaded less than `maxAge` ago.
    public func get(_ key: SessionKey, now: Date) -> Session? { entry(key, now: now)?.session }

    /// The same, without copying the session out.
    public func entry(_ key: SessionKey, now: Date) -> Entry? {
        entries.read { e in
            guard let entry = e[key], now.timeIntervalSince(entry.loadedAt) < maxAge else { return nil }
            return entry
        }
    }

    /// Caches `session` unless a newer version is already held.
    public func put(_ session: Session, now: Date) {
        let key = SessionKey(tenant: session.tenant, id: session.id)
        entries.write { e in
            if let held = e[key], held.session.version > session.version { return }
            if e.count >= capacity, e[key] == nil, let victim = e.keys.first { e[victim] = nil }
            e[key] = Entry(session: session, loadedAt: now)
        }
    }

    /// Drops the cached copy when it is older than `version` (nil: whatever it is).
    public func remove(_ key: SessionKey, olderThan version: Int64?) {
        entries.write { e in
            guard let held = e[key] else { return }
            if let v = version, held.session.version >= v { return }
            e[key] = nil
        }
    }

    public func remove(_ key: SessionKey) {
        _ = entries.write { $0.removeValue(forKey: key) }
    }

    /// The session id last resolved for a subject at a client.
    public func sessionID(tenant: String, client: String, subject: String) -> String? {
        sessionID(SubjectKey(tenant: tenant, client: client, subject: subject))
    }

    public func setSessionID(_ id: String, tenant: String, client: String, subject: String) {
        setSessionID(id, SubjectKey(tenant: tenant, client: client, subject: subject))
    }

    public func forgetSubject(tenant: String, client: String, subject: String) {
        forget(SubjectKey(tenant: tenant, client: client, subject: subject))
    }

    /// The session id last resolved for an end user at a client.
    public func sessionID(tenant: String, client: String, endUser: String) -> String? {
        sessionID(SubjectKey(tenant: tenant, client: client, subject: endUser, endUser: true))
    }

    public func setSessionID(_ id: String, tenant: String, client: String, endUser: String) {
        setSessionID(id, SubjectKey(tenant: tenant, client: client, subject: endUser, endUser: true))
    }

    public func forgetEndUser(tenant: String, client: String, endUser: String) {
        forget(SubjectKey(tenant: tenant, client: client, subject: endUser, endUser: true))
    }

    private func sessionID(_ key: SubjectKey) -> String? { subjects.read { $0[key] } }

    private func setSessionID(_ id: String, _ key: SubjectKey) {
        subjects.write { s in
            if s.count >= capacity { s.removeAll(keepingCapacity: true) }
            s[key] = id
        }
    }

    private func forget(_ key: SubjectKey) { _ = subjects.write { $0.removeValue(forKey: key) } }

    /// Drops everything of `tenant` (tenant disabled or changed).
    public func removeTenant(_ tenant: String) {
        entries.write { e in e = e.filter { $0.key.tenant != tenant } }
        subjects.write { s in s = s.filter { $0.key.tenant != tenant } }
    }

    public func removeAll() {
        entries.write { $0.removeAll() }
        subjects.write { $0.removeAll() }
    }

    public var count: Int { entries.read { $0.count } }
}
