-- The computer's playing level in a game against the computer (crates/bot's Level names).
-- Games recorded before levels existed were played by today's "belief" player.
ALTER TABLE mm_computer_games
    ADD COLUMN level text NOT NULL DEFAULT 'belief'
    CHECK (level IN ('random', 'greedy', 'belief', 'search'));
