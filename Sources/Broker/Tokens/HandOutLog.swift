import BrokerCore
import Foundation

/// HandOutLog collects what a batch's hand-outs leave behind — their audit events and usage
/// marks — and the client policies they looked up, so that a batch of a thousand takes the
/// audit and usage locks once and reads each client's policy once.
struct HandOutLog {
    var events: [AuditEvent] = []
    var used: [SessionKey] = []
    var policies: [String: RefreshPolicy] = [:]

    init(capacity: Int) {
        events.reserveCapacity(capacity)
        used.reserveCapacity(capacity)
    }

    /// Hands the collected events and marks to their sinks.
    func record(audit: any AuditSink, usage: UsageRecorder<SessionKey>, at now: Date) {
        if !used.isEmpty { usage.record(used, at: now) }
        if !events.isEmpty { audit.record(events) }
    }
}
