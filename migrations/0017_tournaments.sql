-- Organisers' tournaments (services/matchmaking/src/tournament.rs, docs/organisers.md): a Swiss
-- or round robin whose rounds are bulks (mm_bulks) named "tournament:<id>:round:<n>", paired by
-- the pairing loop of any matchmaking process from the results of the rounds before. Only what
-- the organiser chose is stored here; rounds, results and standings are derived from the bulks.

CREATE TABLE mm_tournaments (
    tournament_id text    PRIMARY KEY,
    organiser     text    NOT NULL,
    -- swiss or round_robin
    format        text    NOT NULL CHECK (format IN ('swiss', 'round_robin')),
    -- Rounds of a Swiss (a round robin has one fewer than its entrants, or as many when odd).
    rounds        integer NOT NULL,
    rules         text    NOT NULL,
    time_control  text    NOT NULL,
    rated         boolean NOT NULL,
    -- The first round's start; each later round starts pause_ms after the one before ended.
    start_ms      bigint  NOT NULL,
    pause_ms      bigint  NOT NULL,
    -- [{"id": player, "rating": n}], in the organiser's order; ratings as at creation.
    entrants      jsonb   NOT NULL,
    created_ms    bigint  NOT NULL,
    finished_ms   bigint
);
CREATE INDEX mm_tournaments_running_idx ON mm_tournaments (created_ms) WHERE finished_ms IS NULL;

-- Forfeits: the outcome of a game one seat lost at the deployment deadline names that seat
-- (south_forfeited, north_forfeited); cancelled is kept for both seats lost.
