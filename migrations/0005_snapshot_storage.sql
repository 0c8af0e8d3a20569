-- Cheaper snapshot rewrites. Every append rewrites its game's `games` row, whose snapshot (the
-- engine state as JSON, about 3.7 KB of text) is over the TOAST threshold, so Postgres compresses
-- it on every write: with the default pglz that was 15 % of the database's CPU per move
-- (docs/benchmarks.md). lz4 compresses the same value several times faster. Servers built without
-- lz4 keep pglz: the snapshot reads the same either way, and only new values use the new method.
DO $$
BEGIN
    ALTER TABLE games ALTER COLUMN snapshot SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 is not available; games.snapshot keeps the default compression';
END
$$;

-- Room on each page for the next version of a row, so the update of an append can be a HOT
-- update (no new entry in any of the table's indexes, pruned in place) instead of a new tuple on
-- another page with an entry in every index.
ALTER TABLE games SET (fillfactor = 50);
