/// LockKey derives the 64-bit key of a session's cross-replica refresh lock
/// (`pg_advisory_xact_lock(bigint)`) from tenant and session id. FNV-1a: stable across processes
/// and builds (unlike `Hasher`); a collision only makes two sessions wait for each other.
public enum LockKey {
    public static func session(tenant: String, id: String) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in ["session", tenant, id] {
            for b in part.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
            h = (h ^ 0) &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: h)
    }
}
