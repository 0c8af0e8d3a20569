-- Webhook endpoints resume from a position per shard (docs/sharding.md, "The feeds"): the text
-- form of a lifecycle feed position (`v1.0:<p0>,1:<p1>,...`), written with `cursor` by the
-- lease holder after every fact delivered or parked. Why: on a sharded store the merged `u64`
-- cursor moves only once every shard answers, so one unreachable shard stopped every endpoint;
-- by position the other shards' facts keep flowing. NULL for an endpoint nothing was delivered
-- to since: it resumes from `cursor`, every shard at it (what the merged feed had delivered).
-- `cursor` stays, the cursor of the last fact delivered or parked, for the admin view (it may
-- go back when a shard that was unreachable delivers late).
ALTER TABLE webhook_endpoints ADD COLUMN position text;
