-- Hidden Front game storage: every game is an append-only event log (game_events) plus a snapshot
-- of the engine state at the latest version (games) for fast loads. Every table is keyed by
-- game_id first, so the data can be partitioned (natively or with Citus) by game without any
-- cross-game transaction. See crates/store/src/postgres.rs for how these tables are used.

-- One row per game: who plays, under which rules and clock, and the engine state after the last
-- event. `version` is the seq of the last event; appends are guarded by it (optimistic
-- concurrency: UPDATE ... WHERE version = expected).
CREATE TABLE games (
    game_id      uuid        PRIMARY KEY,
    rules        text        NOT NULL,
    -- serde_json of hidden_front_store::TimeControl.
    time_control jsonb       NOT NULL,
    south_player text        NOT NULL,
    north_player text        NOT NULL,
    version      bigint      NOT NULL CHECK (version >= 0),
    -- serde name of hidden_front_rules::Phase (deployment, play, ended), kept beside the snapshot
    -- so that listing a player's games does not decode snapshots.
    phase        text        NOT NULL,
    -- serde_json of hidden_front_rules::Game. As secret as the log it summarizes.
    snapshot     jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- A player's games, newest first (games_of_player reads one index per seat and merges).
CREATE INDEX games_south_player_idx ON games (south_player, created_at DESC, game_id DESC);
CREATE INDEX games_north_player_idx ON games (north_player, created_at DESC, game_id DESC);

-- The log. The primary key is the last line of defence against a forked history: two writers that
-- somehow both passed the version guard cannot both store seq N.
CREATE TABLE game_events (
    game_id    uuid        NOT NULL REFERENCES games (game_id) ON DELETE CASCADE,
    seq        bigint      NOT NULL CHECK (seq >= 1),
    -- serde_json of hidden_front_rules::Event, with full information.
    event      jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (game_id, seq)
);

-- Commands already applied, by the client's idempotency key, with the answer a retry gets.
-- Written in the same transaction as the events the command caused.
CREATE TABLE game_commands (
    game_id         uuid        NOT NULL REFERENCES games (game_id) ON DELETE CASCADE,
    idempotency_key text        NOT NULL,
    -- Opaque bytes (e.g. an encoded protobuf answer).
    response        bytea       NOT NULL,
    -- The game's version after the command.
    version         bigint      NOT NULL CHECK (version >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (game_id, idempotency_key)
);

-- Creation keys: a retried "create game" (matchmaking pairing, invite accepted) finds the game the
-- first attempt made instead of making a second one. The foreign key is checked at commit because
-- the key is claimed before the game row is written (the claim serializes racing creators).
CREATE TABLE game_creations (
    creation_key text        PRIMARY KEY,
    -- Deliberately not UNIQUE: a second unique index would make a racing retry (same key, same
    -- game id) fail on it instead of finding the key taken. games' primary key already keeps ids
    -- unique.
    game_id      uuid        NOT NULL
                             REFERENCES games (game_id) ON DELETE CASCADE
                             DEFERRABLE INITIALLY DEFERRED,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Gateways' reports of players' connections, each holding until its lease ends, so that a crashed
-- gateway's players count as disconnected after the lease. A side is connected while any
-- gateway's unexpired report says so.
CREATE TABLE presence (
    game_id     uuid        NOT NULL REFERENCES games (game_id) ON DELETE CASCADE,
    side        text        NOT NULL CHECK (side IN ('south', 'north')),
    gateway_id  text        NOT NULL,
    connected   boolean     NOT NULL,
    lease_until timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (game_id, side, gateway_id)
);
