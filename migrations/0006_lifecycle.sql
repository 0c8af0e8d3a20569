-- The lifecycle outbox: facts about games (created, seats filled, play started, ended, seat
-- lost, rating changed, aborted) for the platform's other services, written in the same
-- transaction as the events or rating updates that cause them (crates/lifecycle says which).
-- Consumers read it from a cursor: `position` follows commit order, because every writer takes
-- its positions from the one `lifecycle_counter` row, whose lock it holds until it commits. A
-- reader that has seen position N has therefore seen every fact that will ever have a position
-- below N. Writers that record no fact never touch the counter.
CREATE TABLE lifecycle_facts (
    position    bigint      PRIMARY KEY CHECK (position >= 1),
    -- Chosen by the writer (UUID v7), the CloudEvents `id`: the same on every delivery.
    fact_id     uuid        NOT NULL UNIQUE,
    -- Not a foreign key: facts outlive anything that might ever prune games.
    game_id     uuid        NOT NULL,
    -- The body's `kind` tag, kept as a column for filters.
    kind        text        NOT NULL,
    -- serde_json of hidden_front_lifecycle::FactBody. Never carries hidden information.
    body        jsonb       NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lifecycle_facts_game_idx ON lifecycle_facts (game_id, position);

CREATE TABLE lifecycle_counter (
    id   boolean PRIMARY KEY DEFAULT true CHECK (id),
    last bigint  NOT NULL CHECK (last >= 0)
);
INSERT INTO lifecycle_counter (id, last) VALUES (true, 0);

-- The one way facts are written (the group-commit statement, game creation and matchmaking's
-- rating transaction all call it): positions from the counter, the rows, and a NOTIFY on
-- `hf_lifecycle` carrying the last position, for followers. Returns how many it wrote.
CREATE FUNCTION lifecycle_record(ids uuid[], games uuid[], bodies text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(ids), 0);
    base bigint;
BEGIN
    IF n = 0 THEN
        RETURN 0;
    END IF;
    UPDATE lifecycle_counter SET last = last + n RETURNING last - n INTO base;
    INSERT INTO lifecycle_facts (position, fact_id, game_id, kind, body)
    SELECT base + f.ord, f.id, f.game_id, (f.body::jsonb) ->> 'kind', f.body::jsonb
    FROM UNNEST(ids, games, bodies) WITH ORDINALITY AS f (id, game_id, body, ord);
    PERFORM pg_notify('hf_lifecycle', (base + n)::text);
    RETURN n;
END
$$;
