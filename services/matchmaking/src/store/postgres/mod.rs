//! [`MatchStore`] on Postgres (tables in `migrations/0003_matchmaking.sql` and after, the same
//! database and pool as the games; organisers' bulks in [`bulk`]). Lobby events are rows of `mm_lobby_events` written in the transaction that
//! causes them, with `pg_notify('hf_lobby', <player>)`; one LISTEN connection per store turns the
//! notifications into wake-ups, so a stream in any process sees an event made by any other.
//!
//! Races between processes: pairing takes a per-queue transaction-scoped advisory lock (a
//! process that does not get it skips the queue this round) and locks the tickets it reads
//! (`FOR UPDATE SKIP LOCKED`), so a ticket is paired once; an ended game is applied once through
//! the primary key of `mm_ended_games`, its plan decided from rating rows locked in the same
//! transaction; computer seats are claimed with `FOR UPDATE SKIP LOCKED` and held by a lease.

use super::memory::{
    already_queued, cannot_cancel, cannot_cancel_invite, check_acceptable, checked_pairs,
    invite_match, not_found_invite, not_found_ticket,
};
use super::*;

mod bulk;
mod tournament;

use hidden_front_pg_listen::{Heard, Listen, dedicated_pool};
use sqlx::postgres::{PgPool, PgRow};
use sqlx::{Postgres, Row, Transaction};
use std::sync::Arc;
use tokio::sync::{OnceCell, broadcast};

/// The notification channel of lobby events; the payload is the player id.
pub const LOBBY_CHANNEL: &str = "hf_lobby";

/// Matchmaking state in Postgres. Cheap to clone: clones share the pool and the LISTEN task.
#[derive(Clone)]
pub struct PostgresMatchStore {
    pool: PgPool,
    wakeups: broadcast::Sender<String>,
    listener: Arc<OnceCell<ListenerTask>>,
}

/// Stops the LISTEN task when the last store clone goes away.
struct ListenerTask(tokio::task::JoinHandle<()>);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

const TICKET_COLUMNS: &str = "t.player, t.ticket_id, t.rules, t.time_control, t.rated, t.state, \
     t.priority, t.rating, t.enqueued_ms, t.expires_ms, t.match_id, m.game_id";
const MATCH_COLUMNS: &str = "match_id, kind, rules, time_control, rated, south_player, \
     north_player, south_ticket, north_ticket, invite_code, bulk_id, created_ms, game_id";

/// Rated matches between two players (`$1`, `$2`, either seat), other than game `$4`'s, whose
/// game's end was handled at or after `$3` ms: the pair cap's count
/// (`migrations/0015_rated_pairs.sql` indexes the pair).
const RATED_BETWEEN: &str = "\
    SELECT count(*) FROM mm_matches m JOIN mm_ended_games e ON e.game_id = m.game_id \
    WHERE m.rated \
      AND LEAST(m.south_player, m.north_player) = LEAST($1::text, $2::text) \
      AND GREATEST(m.south_player, m.north_player) = GREATEST($1::text, $2::text) \
      AND e.handled_ms >= $3 AND m.game_id <> $4";
const INVITE_COLUMNS: &str = "i.code, i.player, i.invite_id, i.rules, i.time_control, i.state, \
     i.expires_ms, i.match_id, i.accepted_by, m.game_id";
const COMPUTER_COLUMNS: &str = "game_id, player, request_id, rules, side, seed, level";

fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn unms(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn ticket_from(row: &PgRow) -> Result<Ticket, MatchError> {
    Ok(Ticket {
        player: row.try_get("player")?,
        ticket_id: row.try_get("ticket_id")?,
        queue: Queue {
            rules: row.try_get("rules")?,
            time_control: row.try_get("time_control")?,
            rated: row.try_get("rated")?,
        },
        state: TicketState::parse(row.try_get("state")?)?,
        priority: row.try_get("priority")?,
        rating: row.try_get("rating")?,
        enqueued_ms: unms(row.try_get("enqueued_ms")?),
        expires_ms: unms(row.try_get("expires_ms")?),
        match_id: row.try_get("match_id")?,
        game_id: row.try_get("game_id")?,
    })
}

fn match_from(row: &PgRow) -> Result<Match, MatchError> {
    Ok(Match {
        match_id: row.try_get("match_id")?,
        kind: MatchKind::parse(row.try_get("kind")?)?,
        rules: row.try_get("rules")?,
        time_control: row.try_get("time_control")?,
        rated: row.try_get("rated")?,
        south_player: row.try_get("south_player")?,
        north_player: row.try_get("north_player")?,
        south_ticket: row.try_get("south_ticket")?,
        north_ticket: row.try_get("north_ticket")?,
        invite_code: row.try_get("invite_code")?,
        bulk_id: row.try_get("bulk_id")?,
        created_ms: unms(row.try_get("created_ms")?),
        game_id: row.try_get("game_id")?,
    })
}

fn invite_from(row: &PgRow) -> Result<Invite, MatchError> {
    Ok(Invite {
        code: row.try_get("code")?,
        player: row.try_get("player")?,
        invite_id: row.try_get("invite_id")?,
        rules: row.try_get("rules")?,
        time_control: row.try_get("time_control")?,
        state: InviteState::parse(row.try_get("state")?)?,
        expires_ms: unms(row.try_get("expires_ms")?),
        match_id: row.try_get("match_id")?,
        accepted_by: row.try_get("accepted_by")?,
        game_id: row.try_get("game_id")?,
    })
}

fn rating_from(row: &PgRow) -> Result<(Rating, u32), MatchError> {
    Ok((
        Rating {
            rating: row.try_get("rating")?,
            deviation: row.try_get("deviation")?,
            volatility: row.try_get("volatility")?,
        },
        row.try_get::<i32, _>("games")? as u32,
    ))
}

fn computer_from(row: &PgRow) -> Result<ComputerGame, MatchError> {
    let side: String = row.try_get("side")?;
    Ok(ComputerGame {
        game_id: row.try_get("game_id")?,
        player: row.try_get("player")?,
        request_id: row.try_get("request_id")?,
        rules: row.try_get("rules")?,
        side: Side::parse(&side)
            .ok_or_else(|| MatchError::Corrupt(format!("computer side {side:?}")))?,
        seed: row.try_get::<i64, _>("seed")? as u64,
        level: {
            let level: String = row.try_get("level")?;
            level
                .parse()
                .map_err(|_| MatchError::Corrupt(format!("computer level {level:?}")))?
        },
    })
}

/// Writes a lobby event and its notification (delivered at commit) inside `tx`.
async fn push_event(
    tx: &mut Transaction<'_, Postgres>,
    player: &str,
    kind: &LobbyEventKind,
    now_ms: u64,
) -> Result<(), MatchError> {
    let json = serde_json::to_value(kind).map_err(|e| MatchError::Corrupt(e.to_string()))?;
    sqlx::query("INSERT INTO mm_lobby_events (player, event, created_ms) VALUES ($1, $2, $3)")
        .bind(player)
        .bind(json)
        .bind(ms(now_ms))
        .execute(&mut **tx)
        .await?;
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(LOBBY_CHANNEL)
        .bind(player)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Inserts a waiting ticket inside `tx`; a ticket with the same (player, ticket id) is kept as
/// it is. A second waiting ticket of the player in the queue fails with a unique violation.
async fn insert_ticket(
    tx: &mut Transaction<'_, Postgres>,
    ticket: &Ticket,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO mm_tickets (player, ticket_id, queue_key, rules, time_control, rated, \
         state, priority, rating, enqueued_ms, expires_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, 'waiting', $7, $8, $9, $10) \
         ON CONFLICT (player, ticket_id) DO NOTHING",
    )
    .bind(&ticket.player)
    .bind(&ticket.ticket_id)
    .bind(ticket.queue.key())
    .bind(&ticket.queue.rules)
    .bind(&ticket.queue.time_control)
    .bind(ticket.queue.rated)
    .bind(ticket.priority)
    .bind(ticket.rating)
    .bind(ms(ticket.enqueued_ms))
    .bind(ms(ticket.expires_ms))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.code().as_deref() == Some("23505"))
}

impl PostgresMatchStore {
    /// A store on `pool` (already migrated: the migrations are the workspace's, applied by
    /// `hidden-front migrate` or `hidden_front_store::postgres::MIGRATOR`).
    pub fn from_pool(pool: PgPool) -> PostgresMatchStore {
        PostgresMatchStore {
            pool,
            wakeups: broadcast::channel(4096).0,
            listener: Arc::new(OnceCell::new()),
        }
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn ensure_listening(&self) -> Result<(), MatchError> {
        self.listener
            .get_or_try_init(|| async {
                let listen = Listen::connect(&dedicated_pool(&self.pool), &[LOBBY_CHANNEL]).await?;
                let wakeups = self.wakeups.clone();
                Ok::<_, MatchError>(ListenerTask(tokio::spawn(run_listener(listen, wakeups))))
            })
            .await?;
        Ok(())
    }

    async fn ticket_in(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        player: &str,
        ticket_id: &str,
    ) -> Result<Option<Ticket>, MatchError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TICKET_COLUMNS} FROM mm_tickets t LEFT JOIN mm_matches m \
             ON m.match_id = t.match_id WHERE t.player = $1 AND t.ticket_id = $2"
        )))
        .bind(player)
        .bind(ticket_id)
        .fetch_optional(&mut **tx)
        .await?;
        row.as_ref().map(ticket_from).transpose()
    }

    async fn invite_in(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        code: &str,
        lock: bool,
    ) -> Result<Option<Invite>, MatchError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {INVITE_COLUMNS} FROM mm_invites i LEFT JOIN mm_matches m \
             ON m.match_id = i.match_id WHERE i.code = $1 {}",
            if lock { "FOR UPDATE OF i" } else { "" }
        )))
        .bind(code)
        .fetch_optional(&mut **tx)
        .await?;
        row.as_ref().map(invite_from).transpose()
    }

    /// Both players' ratings, their rows locked until the transaction ends (a new player's row is
    /// made first, so there is a row to lock), in a fixed order so that two settlements sharing a
    /// player cannot deadlock.
    async fn ratings_locked(
        tx: &mut Transaction<'_, Postgres>,
        south: &str,
        north: &str,
    ) -> Result<((Rating, u32), (Rating, u32)), MatchError> {
        let (first, second) = if south <= north {
            (south, north)
        } else {
            (north, south)
        };
        let first_rating = Self::rating_locked(tx, first).await?;
        let second_rating = Self::rating_locked(tx, second).await?;
        Ok(if first == south {
            (first_rating, second_rating)
        } else {
            (second_rating, first_rating)
        })
    }

    async fn rating_locked(
        tx: &mut Transaction<'_, Postgres>,
        player: &str,
    ) -> Result<(Rating, u32), MatchError> {
        sqlx::query(
            "INSERT INTO mm_ratings (player, rating, deviation, volatility, games) \
             VALUES ($1, $2, $3, $4, 0) ON CONFLICT (player) DO NOTHING",
        )
        .bind(player)
        .bind(Rating::default().rating)
        .bind(Rating::default().deviation)
        .bind(Rating::default().volatility)
        .execute(&mut **tx)
        .await?;
        let row = sqlx::query(
            "SELECT rating, deviation, volatility, games FROM mm_ratings WHERE player = $1 \
             FOR UPDATE",
        )
        .bind(player)
        .fetch_one(&mut **tx)
        .await?;
        rating_from(&row)
    }

    /// Writes an end-of-game plan as it is, inside `tx` (the rating rows it changes are locked).
    async fn persist(
        tx: &mut Transaction<'_, Postgres>,
        game_id: Uuid,
        plan: &EndOfGamePlan,
        now_ms: u64,
    ) -> Result<(), MatchError> {
        if let Some(outcome) = plan.outcome {
            sqlx::query("UPDATE mm_ended_games SET outcome = $2 WHERE game_id = $1")
                .bind(game_id)
                .bind(outcome.name())
                .execute(&mut **tx)
                .await?;
        }
        for change in plan.ratings.iter().flatten() {
            sqlx::query(
                "UPDATE mm_ratings SET rating = $2, deviation = $3, volatility = $4, \
                 games = $5 WHERE player = $1",
            )
            .bind(&change.player)
            .bind(change.rating.rating)
            .bind(change.rating.deviation)
            .bind(change.rating.volatility)
            .bind(change.games as i32)
            .execute(&mut **tx)
            .await?;
        }
        for ticket in &plan.requeue {
            // A ticket the player queued meanwhile in the same queue gives way to this one.
            sqlx::query(
                "UPDATE mm_tickets SET state = 'cancelled' WHERE player = $1 \
                 AND queue_key = $2 AND state = 'waiting'",
            )
            .bind(&ticket.player)
            .bind(ticket.queue.key())
            .execute(&mut **tx)
            .await?;
            insert_ticket(tx, ticket).await?;
        }
        for (player, kind) in &plan.events {
            push_event(tx, player, kind, now_ms).await?;
        }
        record_facts(tx, &plan.new_facts(game_id)).await
    }
}

/// Writes `facts` to the lifecycle outbox inside `tx`, through its one writer
/// (`migrations/0006_lifecycle.sql`); nothing when there are none.
async fn record_facts(
    tx: &mut Transaction<'_, Postgres>,
    facts: &[NewFact],
) -> Result<(), MatchError> {
    if facts.is_empty() {
        return Ok(());
    }
    sqlx::query("SELECT lifecycle_record($1::uuid[], $2::uuid[], $3::text[])")
        .bind(facts.iter().map(|f| f.id).collect::<Vec<_>>())
        .bind(facts.iter().map(|f| f.game_id).collect::<Vec<_>>())
        .bind(facts.iter().map(|f| f.body.to_json()).collect::<Vec<_>>())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Writes a tournament step's [`Notices`] inside `tx`: its facts and its players' lobby events.
async fn write_notices(
    tx: &mut Transaction<'_, Postgres>,
    notices: &Notices,
    now_ms: u64,
) -> Result<(), MatchError> {
    record_facts(tx, &notices.facts).await?;
    for (player, kind) in &notices.events {
        push_event(tx, player, kind, now_ms).await?;
    }
    Ok(())
}

/// Passes each lobby notification on as a wakeup (its payload, the player id), and an empty
/// wakeup, which every stream takes as its own, whenever notifications may have been missed.
async fn run_listener(mut listen: Listen, wakeups: broadcast::Sender<String>) {
    loop {
        let wakeup = match listen.next().await {
            Heard::Notification(notification) => notification.payload().to_owned(),
            Heard::MayHaveMissed => String::new(),
        };
        let _ = wakeups.send(wakeup);
    }
}

#[async_trait]
impl MatchStore for PostgresMatchStore {
    async fn enqueue(&self, ticket: Ticket) -> Result<Ticket, MatchError> {
        let mut tx = self.pool.begin().await?;
        let inserted = insert_ticket(&mut tx, &ticket).await;
        match inserted {
            Ok(_) => {}
            Err(error) if is_unique_violation(&error) => {
                drop(tx);
                let other: Option<String> = sqlx::query_scalar(
                    "SELECT ticket_id FROM mm_tickets WHERE player = $1 AND queue_key = $2 \
                     AND state = 'waiting'",
                )
                .bind(&ticket.player)
                .bind(ticket.queue.key())
                .fetch_optional(&self.pool)
                .await?;
                return Err(already_queued(&ticket, &other.unwrap_or_default()));
            }
            Err(error) => return Err(error.into()),
        }
        let stored = self
            .ticket_in(&mut tx, &ticket.player, &ticket.ticket_id)
            .await?
            .ok_or_else(|| MatchError::Corrupt("enqueued ticket vanished".into()))?;
        tx.commit().await?;
        Ok(stored)
    }

    async fn ticket(&self, player: &str, ticket_id: &str) -> Result<Option<Ticket>, MatchError> {
        let mut tx = self.pool.begin().await?;
        let ticket = self.ticket_in(&mut tx, player, ticket_id).await?;
        tx.commit().await?;
        Ok(ticket)
    }

    async fn cancel_ticket(&self, player: &str, ticket_id: &str) -> Result<Ticket, MatchError> {
        let mut tx = self.pool.begin().await?;
        let state: Option<String> = sqlx::query_scalar(
            "SELECT state FROM mm_tickets WHERE player = $1 AND ticket_id = $2 FOR UPDATE",
        )
        .bind(player)
        .bind(ticket_id)
        .fetch_optional(&mut *tx)
        .await?;
        let state = TicketState::parse(&state.ok_or_else(|| not_found_ticket(player, ticket_id))?)?;
        match state {
            TicketState::Waiting => {
                sqlx::query(
                    "UPDATE mm_tickets SET state = 'cancelled' WHERE player = $1 AND ticket_id = $2",
                )
                .bind(player)
                .bind(ticket_id)
                .execute(&mut *tx)
                .await?;
            }
            TicketState::Cancelled => {}
            other => return Err(cannot_cancel(ticket_id, other)),
        }
        let ticket = self
            .ticket_in(&mut tx, player, ticket_id)
            .await?
            .ok_or_else(|| not_found_ticket(player, ticket_id))?;
        tx.commit().await?;
        Ok(ticket)
    }

    async fn expire(&self, now_ms: u64) -> Result<(Vec<Ticket>, Vec<Invite>), MatchError> {
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH expired AS (UPDATE mm_tickets SET state = 'expired' WHERE (player, ticket_id) IN \
               (SELECT player, ticket_id FROM mm_tickets WHERE state = 'waiting' AND expires_ms <= $1 \
                FOR UPDATE SKIP LOCKED) RETURNING *) \
             SELECT {TICKET_COLUMNS} FROM expired t LEFT JOIN mm_matches m ON m.match_id = t.match_id"
        )))
        .bind(ms(now_ms))
        .fetch_all(&mut *tx)
        .await?;
        let tickets = rows
            .iter()
            .map(ticket_from)
            .collect::<Result<Vec<_>, _>>()?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH expired AS (UPDATE mm_invites SET state = 'expired' WHERE code IN \
               (SELECT code FROM mm_invites WHERE state = 'open' AND expires_ms <= $1 \
                FOR UPDATE SKIP LOCKED) RETURNING *) \
             SELECT {INVITE_COLUMNS} FROM expired i LEFT JOIN mm_matches m ON m.match_id = i.match_id"
        )))
        .bind(ms(now_ms))
        .fetch_all(&mut *tx)
        .await?;
        let invites = rows
            .iter()
            .map(invite_from)
            .collect::<Result<Vec<_>, _>>()?;
        for t in &tickets {
            let kind = LobbyEventKind::TicketExpired {
                ticket_id: t.ticket_id.clone(),
            };
            push_event(&mut tx, &t.player, &kind, now_ms).await?;
        }
        for i in &invites {
            let kind = LobbyEventKind::InviteExpired {
                code: i.code.clone(),
            };
            push_event(&mut tx, &i.player, &kind, now_ms).await?;
        }
        tx.commit().await?;
        Ok((tickets, invites))
    }

    async fn waiting_queues(&self) -> Result<Vec<Queue>, MatchError> {
        let rows = sqlx::query(
            "SELECT DISTINCT rules, time_control, rated, queue_key FROM mm_tickets \
             WHERE state = 'waiting' ORDER BY queue_key",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Queue {
                    rules: row.try_get("rules")?,
                    time_control: row.try_get("time_control")?,
                    rated: row.try_get("rated")?,
                })
            })
            .collect()
    }

    async fn waiting_counts(&self) -> Result<(u64, u64), MatchError> {
        let row = sqlx::query(
            "SELECT count(*) FILTER (WHERE rated) AS rated, count(*) FILTER (WHERE NOT rated) \
             AS casual FROM mm_tickets WHERE state = 'waiting'",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((unms(row.try_get("rated")?), unms(row.try_get("casual")?)))
    }

    async fn pair(
        &self,
        queue: &Queue,
        now_ms: u64,
        pairer: Pairer<'_>,
    ) -> Result<Vec<(Match, Ticket, Ticket)>, MatchError> {
        let mut tx = self.pool.begin().await?;
        let key = queue.key();
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtext($1))")
            .bind(format!("hf_matchmaking:{key}"))
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            // Another process pairs this queue right now.
            return Ok(Vec::new());
        }
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TICKET_COLUMNS} FROM mm_tickets t LEFT JOIN mm_matches m \
             ON m.match_id = t.match_id \
             WHERE t.queue_key = $1 AND t.state = 'waiting' AND t.expires_ms > $2 \
             ORDER BY t.priority DESC, t.enqueued_ms, t.player \
             LIMIT 5000 FOR UPDATE OF t SKIP LOCKED"
        )))
        .bind(&key)
        .bind(ms(now_ms))
        .fetch_all(&mut *tx)
        .await?;
        let waiting = rows
            .iter()
            .map(ticket_from)
            .collect::<Result<Vec<_>, _>>()?;
        let pairs = checked_pairs(&waiting, pairer(&waiting));
        let mut made = Vec::new();
        for (a, b) in pairs {
            let (mut south, mut north) = (waiting[a].clone(), waiting[b].clone());
            let m = Match::of_pair(queue, &south, &north, now_ms);
            sqlx::query(
                "INSERT INTO mm_matches (match_id, kind, rules, time_control, rated, queue_key, \
                 south_player, north_player, south_ticket, north_ticket, created_ms) \
                 VALUES ($1, 'queue', $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(m.match_id)
            .bind(&m.rules)
            .bind(&m.time_control)
            .bind(m.rated)
            .bind(&key)
            .bind(&m.south_player)
            .bind(&m.north_player)
            .bind(&m.south_ticket)
            .bind(&m.north_ticket)
            .bind(ms(now_ms))
            .execute(&mut *tx)
            .await?;
            for t in [&mut south, &mut north] {
                let updated = sqlx::query(
                    "UPDATE mm_tickets SET state = 'matched', match_id = $3 \
                     WHERE player = $1 AND ticket_id = $2 AND state = 'waiting'",
                )
                .bind(&t.player)
                .bind(&t.ticket_id)
                .bind(m.match_id)
                .execute(&mut *tx)
                .await?;
                if updated.rows_affected() != 1 {
                    return Err(MatchError::Corrupt(format!(
                        "ticket {} of {} changed while locked",
                        t.ticket_id, t.player
                    )));
                }
                t.state = TicketState::Matched;
                t.match_id = Some(m.match_id);
            }
            made.push((m, south, north));
        }
        tx.commit().await?;
        Ok(made)
    }

    async fn pending_matches(&self, before_ms: u64) -> Result<Vec<Match>, MatchError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MATCH_COLUMNS} FROM mm_matches \
             WHERE game_id IS NULL AND bulk_id IS NULL AND created_ms < $1 \
             ORDER BY created_ms LIMIT 1000"
        )))
        .bind(ms(before_ms))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(match_from).collect()
    }

    async fn complete_match(
        &self,
        match_id: Uuid,
        game_id: Uuid,
        now_ms: u64,
    ) -> Result<Match, MatchError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MATCH_COLUMNS} FROM mm_matches WHERE match_id = $1 FOR UPDATE"
        )))
        .bind(match_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| {
            MatchError::NotFound(
                Reason::MatchNotFound,
                format!("match {match_id} does not exist"),
            )
        })?;
        let mut m = match_from(&row)?;
        match m.game_id {
            Some(existing) if existing == game_id => return Ok(m),
            Some(existing) => {
                return Err(MatchError::FailedPrecondition(
                    Reason::MatchClosed,
                    format!("match {match_id} already has game {existing}, not {game_id}"),
                ));
            }
            None => {}
        }
        sqlx::query("UPDATE mm_matches SET game_id = $2 WHERE match_id = $1")
            .bind(match_id)
            .bind(game_id)
            .execute(&mut *tx)
            .await?;
        m.game_id = Some(game_id);
        for (player, kind) in match_found_events(&m, game_id) {
            push_event(&mut tx, &player, &kind, now_ms).await?;
        }
        tx.commit().await?;
        Ok(m)
    }

    async fn create_invite(&self, invite: Invite) -> Result<Invite, MatchError> {
        let mut tx = self.pool.begin().await?;
        let existing: Option<String> =
            sqlx::query_scalar("SELECT code FROM mm_invites WHERE player = $1 AND invite_id = $2")
                .bind(&invite.player)
                .bind(&invite.invite_id)
                .fetch_optional(&mut *tx)
                .await?;
        if let Some(code) = existing {
            let stored = self.invite_in(&mut tx, &code, false).await?;
            tx.commit().await?;
            return stored.ok_or_else(|| not_found_invite(&code));
        }
        let inserted = sqlx::query(
            "INSERT INTO mm_invites (code, player, invite_id, rules, time_control, state, \
             expires_ms) VALUES ($1, $2, $3, $4, $5, 'open', $6)",
        )
        .bind(&invite.code)
        .bind(&invite.player)
        .bind(&invite.invite_id)
        .bind(&invite.rules)
        .bind(&invite.time_control)
        .bind(ms(invite.expires_ms))
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {
                tx.commit().await?;
                Ok(invite)
            }
            Err(error) if is_unique_violation(&error) => {
                drop(tx);
                // A racing retry of the same invite, or the code is someone else's.
                let mut tx = self.pool.begin().await?;
                let existing: Option<String> = sqlx::query_scalar(
                    "SELECT code FROM mm_invites WHERE player = $1 AND invite_id = $2",
                )
                .bind(&invite.player)
                .bind(&invite.invite_id)
                .fetch_optional(&mut *tx)
                .await?;
                match existing {
                    Some(code) => self
                        .invite_in(&mut tx, &code, false)
                        .await?
                        .ok_or_else(|| not_found_invite(&code)),
                    None => Err(MatchError::AlreadyExists(
                        Reason::MatchExists,
                        format!("invite code {} is taken", invite.code),
                    )),
                }
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn invite(&self, code: &str) -> Result<Option<Invite>, MatchError> {
        let mut tx = self.pool.begin().await?;
        let invite = self.invite_in(&mut tx, code, false).await?;
        tx.commit().await?;
        Ok(invite)
    }

    async fn accept_invite(
        &self,
        code: &str,
        player: &str,
        now_ms: u64,
    ) -> Result<Match, MatchError> {
        let mut tx = self.pool.begin().await?;
        let invite = self
            .invite_in(&mut tx, code, true)
            .await?
            .ok_or_else(|| not_found_invite(code))?;
        check_acceptable(&invite, player, now_ms)?;
        if let (InviteState::Accepted, Some(match_id)) = (invite.state, invite.match_id) {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {MATCH_COLUMNS} FROM mm_matches WHERE match_id = $1"
            )))
            .bind(match_id)
            .fetch_one(&mut *tx)
            .await?;
            return match_from(&row);
        }
        let m = invite_match(&invite, player, now_ms);
        sqlx::query(
            "INSERT INTO mm_matches (match_id, kind, rules, time_control, rated, south_player, \
             north_player, invite_code, created_ms) \
             VALUES ($1, 'invite', $2, $3, false, $4, $5, $6, $7)",
        )
        .bind(m.match_id)
        .bind(&m.rules)
        .bind(&m.time_control)
        .bind(&m.south_player)
        .bind(&m.north_player)
        .bind(code)
        .bind(ms(now_ms))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE mm_invites SET state = 'accepted', match_id = $2, accepted_by = $3 \
             WHERE code = $1",
        )
        .bind(code)
        .bind(m.match_id)
        .bind(player)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(m)
    }

    async fn cancel_invite(&self, player: &str, code: &str) -> Result<Invite, MatchError> {
        let mut tx = self.pool.begin().await?;
        let invite = self
            .invite_in(&mut tx, code, true)
            .await?
            .filter(|i| i.player == player)
            .ok_or_else(|| not_found_invite(code))?;
        match invite.state {
            InviteState::Open => {
                sqlx::query("UPDATE mm_invites SET state = 'cancelled' WHERE code = $1")
                    .bind(code)
                    .execute(&mut *tx)
                    .await?;
            }
            InviteState::Cancelled => {}
            other => return Err(cannot_cancel_invite(code, other)),
        }
        let invite = self
            .invite_in(&mut tx, code, false)
            .await?
            .ok_or_else(|| not_found_invite(code))?;
        tx.commit().await?;
        Ok(invite)
    }

    async fn rating(&self, player: &str) -> Result<(Rating, u32), MatchError> {
        let row = sqlx::query(
            "SELECT rating, deviation, volatility, games FROM mm_ratings WHERE player = $1",
        )
        .bind(player)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            None => Ok((Rating::default(), 0)),
            Some(row) => rating_from(&row),
        }
    }

    async fn apply_ended_game(
        &self,
        game_id: Uuid,
        now_ms: u64,
        pair_since_ms: u64,
        decide: EndPolicy<'_>,
    ) -> Result<Option<EndOfGamePlan>, MatchError> {
        let mut tx = self.pool.begin().await?;
        // The primary key makes a racing handler of the same game wait here for this transaction,
        // then find the row: a game's end is applied once.
        let fresh = sqlx::query(
            "INSERT INTO mm_ended_games (game_id, handled_ms) VALUES ($1, $2) \
             ON CONFLICT (game_id) DO NOTHING",
        )
        .bind(game_id)
        .bind(ms(now_ms))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !fresh {
            return Ok(None);
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MATCH_COLUMNS} FROM mm_matches WHERE game_id = $1"
        )))
        .bind(game_id)
        .fetch_optional(&mut *tx)
        .await?;
        let held = match row.as_ref().map(match_from).transpose()? {
            None => None,
            Some(the_match) => {
                let (south_rating, north_rating) =
                    Self::ratings_locked(&mut tx, &the_match.south_player, &the_match.north_player)
                        .await?;
                // Counted after the ratings' row locks: two ends of the same pair's games are
                // decided one after the other, each seeing the other's handled row.
                let rated_between: i64 = sqlx::query_scalar(RATED_BETWEEN)
                    .bind(&the_match.south_player)
                    .bind(&the_match.north_player)
                    .bind(ms(pair_since_ms))
                    .bind(game_id)
                    .fetch_one(&mut *tx)
                    .await?;
                Some(HeldMatch {
                    the_match,
                    south_rating,
                    north_rating,
                    rated_between_recently: u32::try_from(rated_between).unwrap_or(u32::MAX),
                })
            }
        };
        let plan = decide(held.as_ref());
        Self::persist(&mut tx, game_id, &plan, now_ms).await?;
        tx.commit().await?;
        Ok(Some(plan))
    }

    async fn feed_cursor(&self) -> Result<u64, MatchError> {
        let cursor: i64 = sqlx::query_scalar("SELECT cursor FROM mm_feed")
            .fetch_one(&self.pool)
            .await?;
        Ok(unms(cursor))
    }

    async fn advance_feed(&self, cursor: u64) -> Result<(), MatchError> {
        sqlx::query("UPDATE mm_feed SET cursor = GREATEST(cursor, $1)")
            .bind(ms(cursor))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn lobby_events(
        &self,
        player: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LobbyEvent>, MatchError> {
        let rows = sqlx::query(
            "SELECT seq, player, event FROM mm_lobby_events WHERE player = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(player)
        .bind(ms(after_seq))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let json: serde_json::Value = row.try_get("event")?;
                Ok(LobbyEvent {
                    seq: unms(row.try_get("seq")?),
                    player: row.try_get("player")?,
                    kind: serde_json::from_value(json)
                        .map_err(|e| MatchError::Corrupt(format!("lobby event: {e}")))?,
                })
            })
            .collect()
    }

    async fn lobby_wakeups(&self) -> Result<broadcast::Receiver<String>, MatchError> {
        // Subscribe first: a notification between the LISTEN and the caller's first read is
        // then not lost.
        let receiver = self.wakeups.subscribe();
        self.ensure_listening().await?;
        Ok(receiver)
    }

    async fn add_computer_game(&self, game: ComputerGame) -> Result<ComputerGame, MatchError> {
        sqlx::query(
            "INSERT INTO mm_computer_games (game_id, player, request_id, rules, side, seed, level) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        )
        .bind(game.game_id)
        .bind(&game.player)
        .bind(&game.request_id)
        .bind(&game.rules)
        .bind(game.side.name())
        .bind(game.seed as i64)
        .bind(game.level.name())
        .execute(&self.pool)
        .await?;
        self.computer_game(&game.player, &game.request_id)
            .await?
            .ok_or_else(|| {
                MatchError::AlreadyExists(
                    Reason::MatchExists,
                    format!(
                        "game {} already has a computer seat for another request",
                        game.game_id
                    ),
                )
            })
    }

    async fn computer_game(
        &self,
        player: &str,
        request_id: &str,
    ) -> Result<Option<ComputerGame>, MatchError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COMPUTER_COLUMNS} FROM mm_computer_games WHERE player = $1 AND request_id = $2"
        )))
        .bind(player)
        .bind(request_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(computer_from).transpose()
    }

    async fn claim_computer_game(
        &self,
        owner: &str,
        now_ms: u64,
        lease_until_ms: u64,
    ) -> Result<Option<ComputerGame>, MatchError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE mm_computer_games SET owner = $1, lease_until = $3 WHERE game_id = \
               (SELECT game_id FROM mm_computer_games WHERE NOT finished AND lease_until <= $2 \
                ORDER BY game_id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING {COMPUTER_COLUMNS}"
        )))
        .bind(owner)
        .bind(ms(now_ms))
        .bind(ms(lease_until_ms))
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(computer_from).transpose()
    }

    async fn renew_computer_lease(
        &self,
        game_id: Uuid,
        owner: &str,
        lease_until_ms: u64,
    ) -> Result<bool, MatchError> {
        let updated = sqlx::query(
            "UPDATE mm_computer_games SET lease_until = $3 \
             WHERE game_id = $1 AND owner = $2 AND NOT finished",
        )
        .bind(game_id)
        .bind(owner)
        .bind(ms(lease_until_ms))
        .execute(&self.pool)
        .await?;
        Ok(updated.rows_affected() == 1)
    }

    async fn finish_computer_game(&self, game_id: Uuid) -> Result<(), MatchError> {
        sqlx::query("UPDATE mm_computer_games SET finished = true WHERE game_id = $1")
            .bind(game_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn create_bulk_noting(&self, new: NewBulk, notices: Notices) -> Result<Bulk, MatchError> {
        self.insert_bulk(new, &notices).await
    }

    async fn bulk(&self, bulk_id: &str) -> Result<Option<Bulk>, MatchError> {
        bulk::read(&self.pool, bulk_id).await
    }

    async fn bulks(&self, bulk_ids: &[String]) -> Result<Vec<Bulk>, MatchError> {
        bulk::read_many(&self.pool, bulk_ids).await
    }

    async fn cancel_bulk(
        &self,
        bulk_id: &str,
        now_ms: u64,
        margin_ms: u64,
    ) -> Result<Bulk, MatchError> {
        self.cancel(bulk_id, now_ms, margin_ms).await
    }

    async fn due_matches(&self, now_ms: u64, limit: usize) -> Result<Vec<Match>, MatchError> {
        bulk::due(&self.pool, now_ms, limit).await
    }

    async fn create_tournament_noting(
        &self,
        tournament: Tournament,
        notices: Notices,
    ) -> Result<Tournament, MatchError> {
        tournament::insert(&self.pool, tournament, &notices).await
    }

    async fn tournament(&self, tournament_id: &str) -> Result<Option<Tournament>, MatchError> {
        tournament::read(&self.pool, tournament_id).await
    }

    async fn running_tournaments(&self, limit: usize) -> Result<Vec<Tournament>, MatchError> {
        tournament::running(&self.pool, limit).await
    }

    async fn finish_tournament(
        &self,
        tournament_id: &str,
        now_ms: u64,
        notices: Notices,
    ) -> Result<bool, MatchError> {
        tournament::finish(&self.pool, tournament_id, now_ms, &notices).await
    }

    async fn change_entrants(
        &self,
        tournament_id: &str,
        change: EntrantChange<'_>,
    ) -> Result<Tournament, MatchError> {
        tournament::change_entrants(&self.pool, tournament_id, change).await
    }
}
