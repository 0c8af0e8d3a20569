-- Tournaments players enter themselves (PlayerService.JoinTournament) until shortly before the
-- start, and whether accounts marked as bots may enter (docs/organisers.md).
ALTER TABLE mm_tournaments
    ADD COLUMN open_to_players boolean NOT NULL DEFAULT false,
    ADD COLUMN allow_bots      boolean NOT NULL DEFAULT false;
