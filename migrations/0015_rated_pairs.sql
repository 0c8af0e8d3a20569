-- The rated games between two players, whichever seat each had: what the pair cap counts when a
-- rated game ends (services/matchmaking/src/policy.rs, `RatingIntegrity`; docs/matchmaking.md,
-- "Rating integrity"). Only rated matches are indexed; a plain index build, which blocks writes
-- to mm_matches while it runs (a few seconds per million matches).
CREATE INDEX mm_matches_rated_pair_idx
    ON mm_matches (LEAST(south_player, north_player), GREATEST(south_player, north_player))
    WHERE rated;
