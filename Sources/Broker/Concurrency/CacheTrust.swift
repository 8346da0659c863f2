import Foundation
import Synchronization

/// CacheTrust says whether this replica's caches may serve what they hold for their whole
/// maximum age (TOKENBROKER_CACHE_MAX_AGE_SECONDS). They may while the change feed is proven
/// alive — a change any replica makes reaches them at once — and may not while it is not: then
/// a change elsewhere would reach them only by age, so every read goes to the database, as with
/// a maximum age of 0.
///
/// Thread-safety: every method may be called from any thread.
public final class CacheTrust: Sendable {
    private let trusted = Atomic<Bool>(true)

    public init() {}

    /// Whether the caches are trusted now.
    public var isTrusted: Bool { trusted.load(ordering: .relaxed) }

    public func set(_ trusted: Bool) { self.trusted.store(trusted, ordering: .relaxed) }

    /// `configured` while trusted, else 0 (nothing cached is served).
    public func maxAge(_ configured: TimeInterval) -> TimeInterval { isTrusted ? configured : 0 }
}
