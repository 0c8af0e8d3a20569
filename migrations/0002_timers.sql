-- Durable game timers, the feed of ended games, and trace context on events.
--
-- game_timers: at most one timer per (game, slot). The session writes them in the same
-- transaction as the events that arm them (a move is acknowledged only once its deadline is
-- durable); clock processes claim due rows with FOR UPDATE SKIP LOCKED and a lease, fire them at
-- the session, and delete what they fired. Each row is fenced by the version it was armed for and
-- its deadline, so a stale or repeated fire is a no-op in the session.
CREATE TABLE game_timers (
    game_id       uuid        NOT NULL REFERENCES games (game_id) ON DELETE CASCADE,
    slot          text        NOT NULL CHECK (slot IN ('turn', 'reconnect_south', 'reconnect_north')),
    kind          text        NOT NULL CHECK (kind IN ('deployment', 'move', 'reconnect')),
    side          text        NOT NULL CHECK (side IN ('south', 'north')),
    armed_version bigint      NOT NULL CHECK (armed_version >= 0),
    fire_at       timestamptz NOT NULL,
    -- The clock process holding the timer, and until when nobody else may take it.
    claimed_by    text,
    claimed_until timestamptz,
    armed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (game_id, slot)
);

-- Claiming reads the earliest deadlines first.
CREATE INDEX game_timers_fire_at_idx ON game_timers (fire_at);

-- The feed of ended games (matchmaking reads it to rate games and re-seat players). A game gets
-- its position when the append that ends it commits; positions come from the single counter row,
-- whose row lock is held to commit, so positions are assigned in commit order and a reader that
-- saw position N will never later find a game at a position below N.
ALTER TABLE games ADD COLUMN ended_seq bigint;
CREATE UNIQUE INDEX games_ended_seq_idx ON games (ended_seq) WHERE ended_seq IS NOT NULL;

CREATE TABLE ended_games_counter (
    id   boolean PRIMARY KEY DEFAULT true CHECK (id),
    last bigint  NOT NULL
);
INSERT INTO ended_games_counter (id, last) VALUES (true, 0);

-- The W3C traceparent of the command that caused each event (NULL when it was not traced), so
-- that whoever delivers the event later, in any process, continues the command's trace.
ALTER TABLE game_events ADD COLUMN trace_parent text;
