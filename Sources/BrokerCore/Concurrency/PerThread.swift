import Foundation
import Synchronization

/// PerThread splits a buffer written on every request (audit tallies, usage marks) into
/// stripes, one chosen by the calling thread: each HTTP thread mostly takes its own stripe's
/// lock, so threads do not queue behind one another; a drain visits every stripe.
///
/// It lives in the core because both the services and the PostgreSQL audit sink buffer that way;
/// it does no I/O and owns no thread.
///
/// Thread-safety: any thread.
public final class PerThread<Value: Sendable>: Sendable {
    @usableFromInline
    final class Stripe: Sendable {
        @usableFromInline let value: Mutex<Value>
        init(_ v: Value) { value = Mutex(v) }
    }

    @usableFromInline let stripes: [Stripe]

    /// `make` builds each stripe's empty value.
    public init(stripes: Int = 16, _ make: () -> Value) {
        self.stripes = (0..<max(1, stripes)).map { _ in Stripe(make()) }
    }

    /// Runs `body` on the calling thread's stripe. Inlinable: specialized where it is called, a
    /// hand-out's marks take no generic metadata lookup.
    @inlinable
    public func withLock<R: Sendable>(_ body: (inout sending Value) -> sending R) -> sending R {
        // The thread's id, mixed (ids are aligned addresses): Thread.current was a tenth of a
        // 1,000-item batch's CPU.
        let id = UInt(pthread_self()) &* 0x9e37_79b9_7f4a_7c15
        return stripes[Int((id >> 32) % UInt(stripes.count))].value.withLock(body)
    }

    /// Runs `body` on every stripe in turn (one lock at a time).
    public func forEach(_ body: (inout sending Value) -> sending Void) {
        for s in stripes { s.value.withLock(body) }
    }
}
