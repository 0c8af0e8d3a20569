-- The service's pulse, and the outages it found (docs/clock.md, "When the service itself was
-- down").
--
-- service_pulse: one row. Every session process writes the session clock's time here about once a
-- second, under the row's lock, and only while it can reach this database. A pulse that finds the
-- previous one older than the outage threshold has found a time in which no process could serve
-- any game (every session process down, or the database unreachable): in the same transaction it
-- moves every deadline that was still running then by that time, and records the outage below.
-- Because the row lock orders the pulses of every process, one outage is accounted for once.
CREATE TABLE service_pulse (
    id      boolean     PRIMARY KEY DEFAULT true CHECK (id),
    -- NULL until the first pulse: a database that never served has had no outage.
    beat_at timestamptz
);
INSERT INTO service_pulse (id, beat_at) VALUES (true, NULL);

-- Every outage a pulse accounted for: from the last pulse before it to the pulse that found it,
-- and how many deadlines it moved. For operators (and tests) to see what the players were spared.
CREATE TABLE service_outages (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    ended_at        timestamptz NOT NULL CHECK (ended_at > started_at),
    deadlines_moved bigint      NOT NULL CHECK (deadlines_moved >= 0)
);
