/// BacklogStore counts the shared work still to do, across every tenant (metrics). Thread-safe.
public protocol BacklogStore: Sendable {
    func backlog() throws -> Backlog
}
