-- Games spread over several databases (docs/sharding.md).
--
-- store_shard: which shard of a sharded game store this database is. Empty on a database that is
-- the one and only store (the default), which keeps every counter as it was. A sharded store
-- writes its index here the first time it opens the database and refuses to open it as any other
-- index afterwards: placement is written into every game id, so a shard list given in another
-- order would send games to the wrong database.
CREATE TABLE store_shard (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    shard integer NOT NULL CHECK (shard >= 0 AND shard < 256)
);

-- The step between two positions of this database's feeds (the lifecycle outbox and the ended
-- games): 1 alone, 256 as a shard, whose positions all end in its index (position % 256 = shard),
-- so that no two shards ever hand out the same position.
CREATE FUNCTION hf_feed_stride() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN EXISTS (SELECT 1 FROM store_shard) THEN 256 ELSE 1 END
$$;

-- The new last position of a feed counter that hands out `n` positions after `last` (`n` may be
-- 0: the counter only moves up to the present, see below).
--
-- Alone: `last + n`, as before. As a shard: a hybrid logical clock. The positions are
-- `(microseconds since the epoch << 8) | shard`, never below `last + 256`: they still follow
-- commit order on this database (the counter row's lock is held to commit), and, because they
-- follow the clock, positions of different shards interleave in about the order their commits
-- happened. A reader of several shards merges them by position and delivers a position only once
-- every shard's committed counter has reached it (no shard can then still commit below it); a
-- shard that records nothing is moved up to the present with `n` = 0, so an idle shard does not
-- hold the others back.
CREATE FUNCTION hf_feed_advance(last bigint, n bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    shard_index integer;
    aligned bigint;
    clock bigint;
BEGIN
    SELECT s.shard INTO shard_index FROM store_shard s;
    IF shard_index IS NULL THEN
        RETURN last + n;
    END IF;
    -- The smallest number at or above `last` that ends in this shard's index.
    aligned := last + ((shard_index - last % 256) + 256) % 256;
    clock := ((extract(epoch FROM clock_timestamp()) * 1000000)::bigint << 8) | shard_index;
    RETURN greatest(aligned, clock - 256) + 256 * n;
END
$$;

-- The outbox's writer, as in 0006, with its positions from hf_feed_advance.
CREATE OR REPLACE FUNCTION lifecycle_record(ids uuid[], games uuid[], bodies text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(ids), 0);
    stride bigint;
    base bigint;
BEGIN
    IF n = 0 THEN
        RETURN 0;
    END IF;
    stride := hf_feed_stride();
    UPDATE lifecycle_counter SET last = hf_feed_advance(last, n)
    RETURNING last - stride * n INTO base;
    INSERT INTO lifecycle_facts (position, fact_id, game_id, kind, body)
    SELECT base + stride * f.ord, f.id, f.game_id, (f.body::jsonb) ->> 'kind', f.body::jsonb
    FROM UNNEST(ids, games, bodies) WITH ORDINALITY AS f (id, game_id, body, ord);
    PERFORM pg_notify('hf_lifecycle', (base + stride * n)::text);
    RETURN n;
END
$$;

-- A shard's feed counter moved up to at least `target` (aligned to the shard's index) and to the
-- present, recording nothing: what a reader of several shards does to a shard that lags the
-- position it wants to deliver (hf_feed_advance). Jumping ahead of its own clock is safe: the
-- counter only has to grow, and its later positions stay above everything it handed out.
CREATE FUNCTION hf_feed_reach(last bigint, target bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    shard_index integer;
BEGIN
    SELECT s.shard INTO shard_index FROM store_shard s;
    IF shard_index IS NULL THEN
        RETURN greatest(last, target);
    END IF;
    RETURN greatest(hf_feed_advance(last, 0),
                    target + ((shard_index - target % 256) + 256) % 256);
END
$$;
