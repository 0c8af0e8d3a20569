-- The expert level (crates/bot's Level::Expert, the default level from this release): computer
-- games may record it. The check is replaced, not widened in place: Postgres cannot alter a
-- CHECK constraint.
ALTER TABLE mm_computer_games DROP CONSTRAINT mm_computer_games_level_check;
ALTER TABLE mm_computer_games ADD CONSTRAINT mm_computer_games_level_check
    CHECK (level IN ('random', 'greedy', 'belief', 'search', 'expert'));
