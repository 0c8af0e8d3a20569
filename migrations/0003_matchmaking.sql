-- Hidden Front matchmaking: queues of tickets, matches (pairings and accepted invites, each
-- becoming one game), invites, Glicko-2 ratings, the ended-games feed position, per-player lobby
-- events (pushed with pg_notify('hf_lobby', player)) and the computer seats' driver leases.
-- Times are milliseconds since the Unix epoch, taken from the matchmaking process's clock.
-- See services/matchmaking/src/store/postgres.rs for how these tables are used.

-- A player's request to be paired. `queue_key` is "<rules>|<time control>|rated|casual".
CREATE TABLE mm_tickets (
    player      text    NOT NULL,
    ticket_id   text    NOT NULL,
    queue_key   text    NOT NULL,
    rules       text    NOT NULL,
    time_control text   NOT NULL,
    rated       boolean NOT NULL,
    -- waiting, matched, cancelled, expired
    state       text    NOT NULL CHECK (state IN ('waiting', 'matched', 'cancelled', 'expired')),
    priority    boolean NOT NULL DEFAULT false,
    -- The player's rating when enqueued (rated pairing compares these).
    rating      double precision NOT NULL,
    enqueued_ms bigint  NOT NULL,
    expires_ms  bigint  NOT NULL,
    match_id    uuid,
    PRIMARY KEY (player, ticket_id)
);
-- At most one waiting ticket per player per queue.
CREATE UNIQUE INDEX mm_tickets_one_waiting_idx ON mm_tickets (player, queue_key) WHERE state = 'waiting';
-- The pairing scan: a queue's waiting tickets, priority first, oldest first.
CREATE INDEX mm_tickets_queue_idx ON mm_tickets (queue_key, priority DESC, enqueued_ms) WHERE state = 'waiting';
CREATE INDEX mm_tickets_expiry_idx ON mm_tickets (expires_ms) WHERE state = 'waiting';

-- Two players to be seated in one game. game_id is set once the session created it (the match id
-- is the creation's idempotency key, so a retry after a crash finds the same game).
CREATE TABLE mm_matches (
    match_id     uuid    PRIMARY KEY,
    -- queue, invite or computer
    kind         text    NOT NULL,
    rules        text    NOT NULL,
    time_control text    NOT NULL,
    rated        boolean NOT NULL,
    queue_key    text,
    south_player text    NOT NULL,
    north_player text    NOT NULL,
    south_ticket text,
    north_ticket text,
    invite_code  text,
    created_ms   bigint  NOT NULL,
    game_id      uuid    UNIQUE
);
CREATE INDEX mm_matches_pending_idx ON mm_matches (created_ms) WHERE game_id IS NULL;

CREATE TABLE mm_invites (
    code         text    PRIMARY KEY,
    player       text    NOT NULL,
    invite_id    text    NOT NULL,
    rules        text    NOT NULL,
    time_control text    NOT NULL,
    state        text    NOT NULL CHECK (state IN ('open', 'accepted', 'cancelled', 'expired')),
    expires_ms   bigint  NOT NULL,
    match_id     uuid,
    accepted_by  text,
    UNIQUE (player, invite_id)
);
CREATE INDEX mm_invites_expiry_idx ON mm_invites (expires_ms) WHERE state = 'open';

CREATE TABLE mm_ratings (
    player     text             PRIMARY KEY,
    rating     double precision NOT NULL,
    deviation  double precision NOT NULL,
    volatility double precision NOT NULL,
    games      integer          NOT NULL
);

-- Ended games already handled (ratings settled, players seated again): the key that makes the
-- handling happen once whatever the number of processes reading the feed.
CREATE TABLE mm_ended_games (
    game_id    uuid   PRIMARY KEY,
    handled_ms bigint NOT NULL
);

-- How far the ended-games feed has been read (one row; only ever moves forward).
CREATE TABLE mm_feed (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    cursor bigint  NOT NULL
);
INSERT INTO mm_feed (id, cursor) VALUES (true, 0);

-- Per-player lobby events; seq orders them (not gapless per player).
CREATE TABLE mm_lobby_events (
    seq        bigserial PRIMARY KEY,
    player     text      NOT NULL,
    -- serde_json of hidden_front_matchmaking::LobbyEventKind.
    event      jsonb     NOT NULL,
    created_ms bigint    NOT NULL
);
CREATE INDEX mm_lobby_events_player_idx ON mm_lobby_events (player, seq);

-- Games with a computer seat, claimed by one driver at a time with a lease.
CREATE TABLE mm_computer_games (
    game_id     uuid    PRIMARY KEY,
    player      text    NOT NULL,
    request_id  text    NOT NULL,
    rules       text    NOT NULL,
    -- The computer's seat: south or north.
    side        text    NOT NULL CHECK (side IN ('south', 'north')),
    seed        bigint  NOT NULL,
    owner       text,
    lease_until bigint  NOT NULL DEFAULT 0,
    finished    boolean NOT NULL DEFAULT false,
    UNIQUE (player, request_id)
);
CREATE INDEX mm_computer_games_open_idx ON mm_computer_games (lease_until) WHERE NOT finished;
