-- Arena entrants who paused (services/matchmaking/src/entrants.rs): withdrawing from a running
-- arena pauses the player (no new waves pair them; their points stay), joining again resumes.
-- A JSON array of player ids, changed with the entrants under the tournament row's lock.
ALTER TABLE mm_tournaments ADD COLUMN paused jsonb NOT NULL DEFAULT '[]';
