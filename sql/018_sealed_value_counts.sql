-- tokenbroker schema, version 18: the fleet's count of sealed values by key (the
-- tokenbroker_sealed_values gauge). Counting reads every sealed column of every row (1.3 s of
-- PostgreSQL CPU at a million sessions); one replica counts for the whole fleet when the count
-- is stale — the one that takes this row's lock — and every replica reads the row.
CREATE TABLE IF NOT EXISTS sealed_value_counts (
    scope      text PRIMARY KEY DEFAULT 'fleet' CHECK (scope = 'fleet'),
    counts     jsonb NOT NULL DEFAULT '{}',
    counted_at timestamptz
);
INSERT INTO sealed_value_counts (scope) VALUES ('fleet') ON CONFLICT DO NOTHING;
