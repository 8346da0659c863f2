/// LockKey derives the 64-bit keys of cross-replica locks (`pg_advisory_xact_lock(bigint)`):
/// a session's refresh lock from tenant and session id, an app token's grant lock from tenant,
/// client and ask. FNV-1a: stable across processes and builds (unlike `Hasher`); a collision
/// only makes two holders wait for each other.
public enum LockKey {
    public static func session(tenant: String, id: String) -> Int64 { fnv(["session", tenant, id]) }

    /// The grant lock of an app token (AppTokenStore.withGrantLock).
    public static func appToken(tenant: String, client: String, ask: String) -> Int64 { fnv(["app_token", tenant, client, ask]) }

    private static func fnv(_ parts: [String]) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for b in part.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
            h = (h ^ 0) &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: h)
    }
}
