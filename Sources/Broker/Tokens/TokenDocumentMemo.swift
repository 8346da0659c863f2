import Glibc

/// TokenDocumentMemo keeps the HTTP layer's last rendering of a cached session's plain token
/// document (no DPoP proof, no exchange). Of its members only `expires_in` changes between
/// hand-outs of one session version, so the bytes are rendered once a second rather than once
/// a request. It belongs to a cache entry and goes with it (a new version is a new entry).
///
/// Thread-safety: any thread; the bytes are shared, not copied, on a hit. Every hand-out of a
/// session reads its memo, so readers share a reader-writer lock (56 bytes an entry, where
/// ReadMostly's stripes would be a kilobyte): under a Mutex, hand-outs of one busy session
/// spun on each other when HTTP threads outnumbered cores.
public final class TokenDocumentMemo: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    private var held: (expiresIn: Int, bytes: [UInt8])?

    public init() {
        // Writers first: a steady stream of hand-outs must not hold off the once-a-second keep.
        var attr = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attr)
        pthread_rwlockattr_setkind_np(&attr, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attr)
        pthread_rwlockattr_destroy(&attr)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// The bytes kept for `expiresIn`, or nil.
    public func bytes(expiresIn: Int) -> [UInt8]? {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return held.flatMap { $0.expiresIn == expiresIn ? $0.bytes : nil }
    }

    public func keep(_ bytes: [UInt8], expiresIn: Int) {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        held = (expiresIn, bytes)
    }
}
