/// AuditSink receives audit events. `record` never blocks on I/O: implementations buffer and
/// write in bulk, and `flush` writes what is buffered (called at shutdown).
public protocol AuditSink: Sendable {
    func record(_ event: AuditEvent)
    /// Several events at once (a batch's hand-outs): implementations may take their lock once.
    func record(_ events: [AuditEvent])
    func flush()
}

extension AuditSink {
    public func record(_ events: [AuditEvent]) {
        for e in events { record(e) }
    }
}
