-- The engine snapshot as the JSON bytes the engine wrote (`bytea`), which Postgres stores
-- without parsing. Parsing the ~3.4 KB snapshot into `jsonb` on every write was about 130 us of
-- the database's CPU per append, more than the rest of the row update (docs/benchmarks.md,
-- round 11); a `bytea` value is copied and compressed, nothing else.
--
-- `snapshot` and `version` keep their meaning for every release: the `jsonb` snapshot and the
-- version it is at. This release writes it when it creates a game (and when asked to catch up
-- for a rollback); its appends write `raw_snapshot`, at `raw_version`, instead, and move
-- `head_version` as a lagging snapshot does (migration 0009). A load starts from whichever of
-- the two is newer and replays the events after it.
--
-- The previous release (which reads `head_version`) reads the `jsonb` snapshot and replays the
-- log after it, so it serves every game correctly during a rolling upgrade, only with a longer
-- replay; a release without `head_version` reads an older (snapshot, version) pair and its
-- append collides with the log's primary key, as with a lagging snapshot. A release that wrote
-- the `jsonb` snapshot past `raw_version` is read from it.
--
-- Adding nullable columns without defaults is a catalog change: no table rewrite.
ALTER TABLE games ADD COLUMN raw_snapshot bytea, ADD COLUMN raw_version bigint;
DO $$
BEGIN
    ALTER TABLE games ALTER COLUMN raw_snapshot SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 is not available; games.raw_snapshot keeps the default compression';
END
$$;
