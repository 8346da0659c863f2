import Synchronization

/// TokenDocumentMemo keeps the HTTP layer's last rendering of a cached session's plain token
/// document (no DPoP proof, no exchange). Of its members only `expires_in` changes between
/// hand-outs of one session version, so the bytes are rendered once a second rather than once
/// a request. It belongs to a cache entry and goes with it (a new version is a new entry).
///
/// Thread-safety: any thread; the bytes are shared, not copied, on a hit.
public final class TokenDocumentMemo: Sendable {
    private let held = Mutex<(expiresIn: Int, bytes: [UInt8])?>(nil)

    public init() {}

    /// The bytes kept for `expiresIn`, or nil.
    public func bytes(expiresIn: Int) -> [UInt8]? {
        held.withLock { h in h.flatMap { $0.expiresIn == expiresIn ? $0.bytes : nil } }
    }

    public func keep(_ bytes: [UInt8], expiresIn: Int) { held.withLock { $0 = (expiresIn, bytes) } }
}
