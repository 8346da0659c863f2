/// AuditSink receives audit events. `record` never blocks on I/O: implementations buffer and
/// write in bulk, and `flush` writes what is buffered (called at shutdown).
public protocol AuditSink: Sendable {
    func record(_ event: AuditEvent)
    func flush()
}
