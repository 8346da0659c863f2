import BrokerCore
import Foundation

/// PostgresSealedValues walks every sealed column. A sealed value begins `0x01 | len | kid`
/// (AESGCMSealer), so the key id is read in SQL (`substring(v from 3 for get_byte(v, 1))`)
/// without opening anything: counting is one scan per table, and re-sealing reads only the
/// values under another key.
public final class PostgresSealedValues: SealedValueStore {
    /// One sealed column: its table, the key its rows are walked in, and how its context is
    /// built from a row's tenant and id (the additional data it was sealed with).
    struct Column {
        let table: String, column: String, key: (String, String), context: String
        /// Re-sealed (pending logins are not: they expire within minutes).
        var reseals = true
        func context(tenant: String, id: String) -> String { "\(context)/\(tenant)/\(id)/\(column)" }
    }

    static let columns: [Column] = [
        Column(table: "sessions", column: "refresh_token", key: ("tenant_id", "id"), context: "sessions"),
        Column(table: "sessions", column: "access_token", key: ("tenant_id", "id"), context: "sessions"),
        Column(table: "sessions", column: "id_token", key: ("tenant_id", "id"), context: "sessions"),
        Column(table: "sessions", column: "dpop_key", key: ("tenant_id", "id"), context: "sessions"),
        Column(table: "clients", column: "client_secret", key: ("tenant_id", "id"), context: "clients"),
        Column(table: "clients", column: "assertion_key", key: ("tenant_id", "id"), context: "clients"),
        Column(table: "clients", column: "tls_client_credential", key: ("tenant_id", "id"), context: "clients"),
        Column(table: "revocation_outbox", column: "token", key: ("id", "tenant_id"), context: "revocations"),
        Column(table: "webhook_endpoints", column: "secret", key: ("tenant_id", "id"), context: "webhooks"),
        Column(table: "broker_keys", column: "private_key", key: ("kid", "scope"), context: "broker_keys"),
        Column(table: "webhook_endpoints", column: "previous_secret", key: ("tenant_id", "id"), context: "webhooks"),
        Column(table: "app_tokens", column: "access_token", key: ("tenant_id", "id"), context: "app_tokens"),
        Column(table: "app_tokens", column: "dpop_key", key: ("tenant_id", "id"), context: "app_tokens"),
        Column(table: "logins", column: "verifier", key: ("tenant_id", "id"), context: "logins", reseals: false),
        Column(table: "logins", column: "nonce", key: ("tenant_id", "id"), context: "logins", reseals: false),
        Column(table: "logins", column: "dpop_key", key: ("tenant_id", "id"), context: "logins", reseals: false),
    ]

    /// The key id a value names (empty for a value too short to be sealed: counted, never opened).
    static func kid(_ column: String) -> String {
        "(CASE WHEN octet_length(\(column)) > 1 THEN substring(\(column) from 3 for get_byte(\(column), 1)) ELSE ''::bytea END)"
    }

    let pool: PGPool
    let sealer: any Sealer

    public init(pool: PGPool, sealer: any Sealer) {
        self.pool = pool
        self.sealer = sealer
    }

    public func countByKey(pendingLogins: Bool) throws -> [String: Int] {
        try pool.run { c in
            Dictionary(uniqueKeysWithValues: try c.execute(SQL(stringLiteral: Self.counting(pendingLogins: pendingLogins)))
                .map { r -> (String, Int) in (try r["kid"], try r["n"]) })
        }
    }

    /// `kid, count` rows over the sealed columns: one scan per table.
    static func counting(pendingLogins: Bool) -> String {
        let tables = Dictionary(grouping: columns.filter { pendingLogins || $0.reseals }, by: \.table).sorted { $0.key < $1.key }
        let scans = tables.map { table, columns in
            "SELECT encode(\(kid("v")), 'escape') AS kid FROM \(table), LATERAL (VALUES "
                + columns.map { "(\($0.column))" }.joined(separator: ", ") + ") AS s(v) WHERE v IS NOT NULL"
        }
        return "SELECT kid, count(*) AS n FROM (" + scans.joined(separator: " UNION ALL ") + ") AS k GROUP BY kid"
    }

    public func recount(now: Date) throws -> SealedValueCount {
        try pool.transact { c in
            try c.execute("SELECT 1 FROM sealed_value_counts FOR UPDATE")   // one counter at a time
            return try record(c, now: now)
        }
    }

    public func sharedCount(maxAge: TimeInterval, now: Date) throws -> SealedValueCount {
        try pool.transact { c in
            // Stale, and nobody holds the row: this replica counts for the fleet. A replica
            // that finds it held reads the kept count (MVCC: the reader does not wait).
            let mine = try c.execute("""
                SELECT 1 FROM sealed_value_counts
                WHERE counted_at IS NULL OR counted_at < \(now.addingTimeInterval(-maxAge)) FOR UPDATE SKIP LOCKED
                """).count == 1
            if mine { return try record(c, now: now) }
            return try c.execute("SELECT counts::text AS counts, extract(epoch from counted_at) AS counted_at FROM sealed_value_counts")
                .first { try Self.decode($0) } ?? SealedValueCount(values: [:], countedAt: nil)
        }
    }

    /// Counts in the database and keeps the count in the same statement, answering it.
    private func record(_ c: PGConnection, now: Date) throws -> SealedValueCount {
        try c.execute("""
            UPDATE sealed_value_counts SET counted_at = \(now),
                counts = (SELECT coalesce(jsonb_object_agg(kid, n), '{}') FROM (\(raw: Self.counting(pendingLogins: true))) AS k)
            RETURNING counts::text AS counts, extract(epoch from counted_at) AS counted_at
            """).first { try Self.decode($0) } ?? SealedValueCount(values: [:], countedAt: nil)
    }

    private static func decode(_ r: PGRow) throws -> SealedValueCount {
        let text: String = try r["counts"]
        // Not JSON, or not a kid → count object: refused, naming the column (the parse error
        // itself says no more than that).
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Int] else {
            throw BrokerError.storedValueUnknown(column: "sealed_value_counts.counts", value: String(text.prefix(200)))
        }
        return SealedValueCount(values: object, countedAt: try r["counted_at"])
    }

    public func reseal(after cursor: ResealBatch.Cursor?, limit: Int) throws -> ResealBatch {
        guard let current = sealer.sealingKeyID else { throw BrokerError.internalError }
        var index = cursor?.column ?? 0
        while index < Self.columns.count, !Self.columns[index].reseals { index += 1 }
        guard index < Self.columns.count else { return ResealBatch(resealed: 0, unopenable: 0, next: nil) }
        let col = Self.columns[index]
        let after = cursor.flatMap { $0.column == index && $0.key.count == 2 ? $0.key : nil }
        return try pool.transact { c in
            let position: SQL = after.map { "AND (\(raw: col.key.0), \(raw: col.key.1)) > (\($0[0]), \($0[1]))" } ?? ""
            let rows = try c.execute("""
                SELECT \(raw: col.key.0) AS k0, \(raw: col.key.1) AS k1, \(raw: col.column) AS value FROM \(raw: col.table)
                WHERE \(raw: col.column) IS NOT NULL AND \(raw: Self.kid(col.column)) <> \(Array(current.utf8)) \(position)
                ORDER BY \(raw: col.key.0), \(raw: col.key.1) LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """).map { r -> (String, String, [UInt8]) in (try r["k0"], try r["k1"], try r.bytes("value") ?? []) }
            var keys: ([String], [String]) = ([], []), sealed: [String] = [], unopenable = 0
            for (k0, k1, value) in rows {
                let (tenant, id) = col.key.0 == "tenant_id" ? (k0, k1) : (k1, k0)
                let context = col.context(tenant: tenant, id: id)
                // A value that does not open (a key no replica has any more, or tampered data) is
                // counted and reported as unopenable, not an error that stops the reseal.
                guard let plain = try? sealer.open(value, context: context) else { unopenable += 1; continue }
                keys.0.append(k0)
                keys.1.append(k1)
                sealed.append("\\x" + PGText.hex(try sealer.seal(plain, context: context)))
            }
            if !sealed.isEmpty {
                try c.execute("""
                    UPDATE \(raw: col.table) t SET \(raw: col.column) = v.sealed::bytea
                    FROM unnest(\(keys.0), \(keys.1), \(sealed)) AS v(k0, k1, sealed)
                    WHERE t.\(raw: col.key.0) = v.k0 AND t.\(raw: col.key.1) = v.k1
                    """)
            }
            let next: ResealBatch.Cursor? = rows.count == limit
                ? ResealBatch.Cursor(column: index, key: [rows.last!.0, rows.last!.1])
                : index + 1 < Self.columns.count ? ResealBatch.Cursor(column: index + 1, key: []) : nil
            return ResealBatch(resealed: sealed.count, unopenable: unopenable, next: next)
        }
    }
}
