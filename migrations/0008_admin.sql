-- The admin API (docs/admin.md): finding games, and the audit log of what operators did.

-- Finding games newest first (AdminService.FindGames pages by (created_at, game_id)). created_at
-- never changes, so this index keeps the appends' updates of `games` HOT (0005).
CREATE INDEX games_created_at_idx ON games (created_at DESC, game_id DESC);

-- Every inspection and abort of a game by an operator: who, when, what, which game, why, and how
-- it went. Append-only; no foreign key to games, so the record outlives any clean-up of games.
CREATE TABLE admin_audit (
    entry_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    -- The operator's configured name (hidden-front serve --admin-token NAME=TOKEN).
    operator text        NOT NULL,
    -- hidden_front_store::AuditAction's name: inspect, abort.
    action   text        NOT NULL,
    game_id  uuid        NOT NULL,
    -- The operator's reason, as given.
    reason   text        NOT NULL,
    -- How it went: ok, applied at version N, refused: REASON.
    outcome  text        NOT NULL
);

-- One game's entries, newest first.
CREATE INDEX admin_audit_game_idx ON admin_audit (game_id, entry_id DESC);
