-- Organisers' bulk pairings (services/matchmaking/src/store/bulk.rs, docs/organisers.md): games
-- between given pairs of players, created together at one start time. Each pair is an mm_matches
-- row of kind 'bulk' naming its bulk; the pairing loop seats those whose due time has come.

CREATE TABLE mm_bulks (
    bulk_id      text    PRIMARY KEY,
    -- The operator who made it (their token's configured name).
    organiser    text    NOT NULL,
    rules        text    NOT NULL,
    time_control text    NOT NULL,
    rated        boolean NOT NULL,
    -- When the games are created and their clocks start.
    start_ms     bigint  NOT NULL,
    created_ms   bigint  NOT NULL,
    cancelled_ms bigint
);

ALTER TABLE mm_matches
    ADD COLUMN bulk_id    text REFERENCES mm_bulks (bulk_id),
    -- The match's place in its bulk (the organiser's order).
    ADD COLUMN bulk_index integer,
    -- When a bulk match is to be seated; cleared when its bulk is cancelled.
    ADD COLUMN due_ms     bigint;

CREATE INDEX mm_matches_bulk_idx ON mm_matches (bulk_id, bulk_index) WHERE bulk_id IS NOT NULL;
-- Bulk matches waiting for their start: only those, so the scan is as small as what is due.
CREATE INDEX mm_matches_due_idx ON mm_matches (due_ms) WHERE game_id IS NULL AND due_ms IS NOT NULL;
-- Matches left without a game by a process that died: bulk ones never (they are due instead).
DROP INDEX mm_matches_pending_idx;
CREATE INDEX mm_matches_pending_idx ON mm_matches (created_ms) WHERE game_id IS NULL AND bulk_id IS NULL;

-- How a handled game ended (south_won, north_won, drawn, cancelled, aborted), for a bulk's status.
ALTER TABLE mm_ended_games ADD COLUMN outcome text;
