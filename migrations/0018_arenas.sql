-- Arenas among organisers' tournaments (services/matchmaking/src/tournament.rs): a fixed duration
-- in which players are paired again as soon as their game ends, in waves stored as bulks named
-- "tournament:<id>:round:<n>" like a Swiss's rounds. 0 for the other formats.
ALTER TABLE mm_tournaments DROP CONSTRAINT mm_tournaments_format_check;
ALTER TABLE mm_tournaments
    ADD CONSTRAINT mm_tournaments_format_check CHECK (format IN ('swiss', 'round_robin', 'arena')),
    ADD COLUMN duration_ms bigint NOT NULL DEFAULT 0;
