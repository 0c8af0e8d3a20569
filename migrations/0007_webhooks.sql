-- Webhook delivery state (crates/webhooks): per configured endpoint a cursor into the lifecycle
-- outbox and a lease saying which replica sends, and the facts parked as dead letters. Every
-- replica runs a deliverer per endpoint; only the lease holder sends, and it moves the cursor
-- or parks only while its lease is unexpired (the statements check `lease_until > now()`), so
-- one that lost its lease stops before sending more.
CREATE TABLE webhook_endpoints (
    name          text        PRIMARY KEY,
    -- The last outbox position delivered (2xx) or parked: delivery resumes after it.
    cursor        bigint      NOT NULL DEFAULT 0 CHECK (cursor >= 0),
    lease_holder  text,
    lease_until   timestamptz,
    -- The last failed attempt, for operators; cleared by the next success.
    last_error    text,
    last_error_at timestamptz
);

CREATE TABLE webhook_dead_letters (
    endpoint         text        NOT NULL REFERENCES webhook_endpoints (name),
    -- The fact's outbox position and id (lifecycle_facts; not a foreign key: facts are kept).
    position         bigint      NOT NULL,
    fact_id          uuid        NOT NULL,
    attempts         integer     NOT NULL CHECK (attempts >= 0),
    last_error       text        NOT NULL,
    first_attempt_at timestamptz NOT NULL,
    parked_at        timestamptz NOT NULL DEFAULT now(),
    -- An operator asked for it to be sent again; the lease holder sends it before the next
    -- live fact and removes the row on success (or parks it again, this flag cleared).
    replay_requested boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (endpoint, position)
);
CREATE INDEX webhook_dead_letters_replay_idx ON webhook_dead_letters (endpoint, position)
    WHERE replay_requested;
