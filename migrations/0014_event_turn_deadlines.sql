-- The turn deadline each append armed, on the append's last event (`StoredEvent::
-- armed_turn_deadline`; docs/session.md, "Streams"). Why: a `WatchGame` pump that streams the
-- game's status advances it from the events it reads instead of reading the whole game
-- (`GameStore::observe`) after every move, which tripled Postgres' CPU per move; the move clock
-- is the one part of that status an event cannot tell by itself, and a pump must follow moves
-- appended by other session processes too. NULL on an append's other events, when the append
-- armed no turn deadline, on creations' events, and on rows written by earlier releases (which
-- do not know the column): the pump then reads the game once, as before.
ALTER TABLE game_events ADD COLUMN armed_turn_deadline timestamptz;
