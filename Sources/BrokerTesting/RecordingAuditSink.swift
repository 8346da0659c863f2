import BrokerCore
import Synchronization

/// RecordingAuditSink keeps every event for assertions.
public final class RecordingAuditSink: AuditSink {
    private let events = Mutex<[AuditEvent]>([])
    public init() {}
    public func record(_ e: AuditEvent) { events.withLock { $0.append(e) } }
    public func flush() {}
    public var recorded: [AuditEvent] { events.withLock { $0 } }
}

/// LocalChangeFeed delivers changes within the process, synchronously.
public final class LocalChangeFeed: ChangeFeed {
    private let handlers = Mutex<[@Sendable (Change) -> Void]>([])
    public let published = Mutex<[Change]>([])
    public init() {}
    public func publish(_ change: Change) {
        published.withLock { $0.append(change) }
        for h in handlers.withLock({ $0 }) { h(change) }
    }
    public func subscribe(_ handler: @escaping @Sendable (Change) -> Void) { handlers.withLock { $0.append(handler) } }
}

/// PlainSecretHasher hashes by reversing bytes: enough for unit tests of the authenticator's
/// logic; the real hasher (SHA-256, constant-time compare) has its own adapter tests.
public struct PlainSecretHasher: SecretHasher {
    public init() {}
    public func hash(_ secret: String) -> [UInt8] { Array(secret.utf8.reversed()) }
    public func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool { !a.isEmpty && a == b }
}
