//! The `MatchmakingService` gRPC implementation and its background loops (pairing, the
//! ended-games feed, the computer seats' driver).

use crate::announce;
use crate::config::MatchmakingConfig;
use crate::driver::{self, DriverStats};
use crate::organiser::standing_to_proto;
use crate::pairing::{pair_casual, pair_rated};
use crate::policy;
use crate::store::{
    ComputerGame, EndedGame, EndedResult, Invite, InviteState, LobbyEvent, LobbyEventKind, Match,
    MatchError, MatchStore, NewBulk, Queue, Ticket, TicketState, Tournament, round_bulk_id,
};
use crate::tournament::{self, Step};
use futures_util::StreamExt;
use hidden_front_api_error::text::{self, TextKind};
use hidden_front_api_error::{ApiError, Reason, brief, quote};
use hidden_front_bot::Level;
use hidden_front_metrics_names as names;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::matchmaking_service_server::{
    MatchmakingService as MatchmakingApi, MatchmakingServiceServer,
};
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_rules::{Rules, Side};
use hidden_front_wire as wire;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use uuid::Uuid;

/// The matchmaking service's client of the session service (trace context included).
pub type SessionClient = SessionServiceClient<hidden_front_telemetry::TracedChannel>;

/// The player id of every computer seat.
pub const COMPUTER_PLAYER: &str = "computer";
/// Lobby events read per store query while streaming.
const LOBBY_PAGE: usize = 100;

/// How many matches of a round are seated at once ([`MatchmakingService::seat_all`]): enough to
/// fill the group commits, few enough that a round's burst of `CreateGame` calls does not crowd
/// out the moves being played.
const SEATS_AT_ONCE: usize = 32;
/// Tournaments advanced per round at most (the oldest first).
const TOURNAMENTS_PER_ROUND: usize = 1000;
/// Bulk matches started per round at most: a bulk's largest size, so one bulk starts in one round.
const DUE_PER_ROUND: usize = crate::organiser::MAX_BULK_PAIRS;
/// Invite code alphabet: no 0/O, 1/I/L, so a code read aloud is typed right.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// Invite code length.
const CODE_LEN: usize = 6;

/// Milliseconds since the Unix epoch now, by the system's clock (computer-seat leases, shared
/// with other processes, never use a test's clock).
pub fn now_ms() -> u64 {
    hidden_front_time::unix_ms(SystemTime::now())
}

pub(crate) fn ms_of(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

/// The gRPC status of a store failure.
pub fn match_error_status(error: MatchError) -> Status {
    match error {
        MatchError::NotFound(reason, m)
        | MatchError::AlreadyExists(reason, m)
        | MatchError::FailedPrecondition(reason, m) => ApiError::new(reason, m).into(),
        MatchError::Database(m) => {
            // The database's text is for the operator's log, not for callers.
            tracing::error!(error = %m, "matchmaking store failed");
            metrics::counter!(names::STORE_ERRORS_TOTAL, names::OPERATION => "matchmaking")
                .increment(1);
            ApiError::new(
                Reason::StoreUnavailable,
                "matchmaking storage is unavailable; retry with the same id",
            )
            .into()
        }
        MatchError::Corrupt(m) => {
            tracing::error!(error = %m, "matchmaking store holds corrupt data");
            ApiError::new(
                Reason::CorruptData,
                "stored matchmaking data cannot be read",
            )
            .into()
        }
    }
}

pub(crate) fn check_id(field: &str, value: &str) -> Result<(), Status> {
    text::required(field, value, TextKind::Id).map_err(Status::from)
}

/// The computer level a request names; empty means [`Level::DEFAULT`].
fn parse_level(field: &str, name: &str) -> Result<Level, Status> {
    if name.is_empty() {
        return Ok(Level::DEFAULT);
    }
    name.parse::<Level>().map_err(|_| {
        let levels = Level::ALL.map(Level::name).join(", ");
        ApiError::invalid_field(
            field,
            format!("{} is not a computer level (levels: {levels})", quote(name)),
        )
        .into()
    })
}

pub(crate) fn parse_rules(field: &str, name: &str) -> Result<Rules, Status> {
    let name = if name.is_empty() {
        "hidden-front"
    } else {
        name
    };
    text::check(field, name, TextKind::Rules)?;
    Rules::parse(name).map_err(|e| {
        ApiError::new(
            Reason::UnknownRules,
            format!(
                "{field}: {} is not a rule set: {}",
                quote(name),
                brief(&e.to_string())
            ),
        )
        .with_violation(field, brief(&e.to_string()))
        .into()
    })
}

pub(crate) fn parse_time_control(field: &str, name: &str, default: &str) -> Result<String, Status> {
    match name {
        "" => Ok(default.to_owned()),
        "online" | "relaxed" => Ok(name.to_owned()),
        other => Err(ApiError::invalid_field(
            field,
            format!("{} is not one of online, relaxed", quote(other)),
        )
        .into()),
    }
}

fn side_to_proto(side: Side) -> i32 {
    wire::side_to_proto(side) as i32
}

fn ticket_to_proto(t: &Ticket) -> pb::Ticket {
    pb::Ticket {
        ticket_id: t.ticket_id.clone(),
        player: t.player.clone(),
        queue: Some(pb::Queue {
            rules: t.queue.rules.clone(),
            time_control: t.queue.time_control.clone(),
            rated: t.queue.rated,
        }),
        state: match t.state {
            TicketState::Waiting => pb::TicketState::Waiting,
            TicketState::Matched => pb::TicketState::Matched,
            TicketState::Cancelled => pb::TicketState::Cancelled,
            TicketState::Expired => pb::TicketState::Expired,
        } as i32,
        priority: t.priority,
        enqueued_at_unix_ms: t.enqueued_ms,
        expires_at_unix_ms: t.expires_ms,
        match_id: t.match_id.map(|m| m.to_string()).unwrap_or_default(),
        game_id: t.game_id.map(|g| g.to_string()).unwrap_or_default(),
    }
}

/// The wire form of a lobby event.
pub fn lobby_event_to_proto(event: &LobbyEvent) -> pb::LobbyEvent {
    use pb::lobby_event::Kind;
    let kind = match &event.kind {
        LobbyEventKind::MatchFound {
            game_id,
            seat,
            opponent,
            ticket_id,
            invite_code,
            bulk_id,
        } => Kind::MatchFound(pb::MatchFound {
            game_id: game_id.to_string(),
            seat: side_to_proto(*seat),
            opponent: opponent.clone(),
            ticket_id: ticket_id.clone().unwrap_or_default(),
            invite_code: invite_code.clone().unwrap_or_default(),
            bulk_id: bulk_id.clone().unwrap_or_default(),
        }),
        LobbyEventKind::TicketExpired { ticket_id } => Kind::TicketExpired(pb::TicketExpired {
            ticket_id: ticket_id.clone(),
        }),
        LobbyEventKind::Requeued {
            ticket_id,
            cancelled_game_id,
        } => Kind::Requeued(pb::Requeued {
            ticket_id: ticket_id.clone(),
            cancelled_game_id: cancelled_game_id.to_string(),
        }),
        LobbyEventKind::InviteExpired { code } => {
            Kind::InviteExpired(pb::InviteExpired { code: code.clone() })
        }
        LobbyEventKind::TournamentStandings(update) => {
            Kind::TournamentStandings(pb::TournamentStandings {
                tournament_id: update.tournament_id.clone(),
                rounds_completed: update.rounds_completed,
                rounds: update.rounds,
                finished: update.finished,
                table: update.table.iter().map(standing_to_proto).collect(),
                you: update.you.as_ref().map(standing_to_proto),
                next: update.next.as_ref().map(|next| pb::TournamentNextGame {
                    round: next.round,
                    opponent: next.opponent.clone().unwrap_or_default(),
                    seat: next
                        .seat
                        .map_or(pb::Side::Unspecified as i32, side_to_proto),
                    bye: next.opponent.is_none(),
                    starts_at_unix_ms: next.start_ms,
                }),
            })
        }
    };
    pb::LobbyEvent {
        seq: event.seq,
        kind: Some(kind),
    }
}

/// An ended game of the session's feed, as matchmaking handles it.
pub fn ended_game_from_proto(game: &pb::EndedGame) -> Result<EndedGame, String> {
    let game_id = Uuid::parse_str(&game.game_id)
        .map_err(|_| format!("ended game id {:?} is not a UUID", game.game_id))?;
    let outcome = game
        .outcome
        .ok_or_else(|| format!("ended game {game_id} has no outcome"))?;
    let decided_on_board = [
        pb::EndReason::FlagCaptured,
        pb::EndReason::NoLegalMoves,
        pb::EndReason::NoCombatLimit,
        pb::EndReason::HqEntered,
    ]
    .iter()
    .any(|reason| *reason as i32 == outcome.reason);
    let result = if outcome.reason == pb::EndReason::Aborted as i32 {
        EndedResult::Aborted
    } else if outcome.reason == pb::EndReason::SeatLost as i32 {
        EndedResult::SeatLost(
            game.seats_lost
                .iter()
                .filter_map(|s| wire::side_from_proto("seats_lost", *s).ok())
                .collect(),
        )
    } else {
        match wire::side_from_proto("outcome.winner", outcome.winner) {
            Ok(side) => EndedResult::Won(side),
            Err(_) => EndedResult::Drawn,
        }
    };
    Ok(EndedGame {
        game_id,
        south_player: game.south_player.clone(),
        north_player: game.north_player.clone(),
        result,
        plies: game.plies,
        decided_on_board,
    })
}

/// The game id of the session's answer to `CreateGame` (a malformed one is the session's fault).
fn created_game_id(created: &pb::CreateGameResponse) -> Result<Uuid, Status> {
    Uuid::parse_str(&created.game_id).map_err(|_| {
        Status::from(ApiError::new(
            Reason::Internal,
            "the session answered a game id that is not a UUID",
        ))
    })
}

/// A random invite code.
fn new_code() -> String {
    let bytes = Uuid::new_v4().into_bytes();
    bytes[..CODE_LEN]
        .iter()
        .map(|b| CODE_ALPHABET[*b as usize % CODE_ALPHABET.len()] as char)
        .collect()
}

/// A stable 128-bit digest (FNV-1a, two lanes) of `text`, for idempotency keys derived from
/// client ids that may be too long to use whole.
fn stable_digest(text: &str) -> String {
    let lane = |offset: u64| {
        text.bytes().fold(offset, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        lane(0xcbf2_9ce4_8422_2325),
        lane(0x6c62_272e_07bb_0142)
    )
}

/// The matchmaking service: the gRPC API and the background loops, sharing one store.
#[derive(Clone)]
pub struct MatchmakingService {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn MatchStore>,
    session: SessionClient,
    config: MatchmakingConfig,
    /// Wakes the computer driver when this process made a computer game.
    computer_added: Notify,
    stats: Arc<DriverStats>,
    /// Tournaments' rounds that have ended, not read again.
    settled: tournament::SettledRounds,
}

impl MatchmakingService {
    /// The tournaments' ended rounds this process keeps ([`tournament::SettledRounds`]).
    pub fn settled_rounds(&self) -> &tournament::SettledRounds {
        &self.inner.settled
    }

    /// A service on `store` creating games through `session`. Serve it with
    /// [`MatchmakingService::server`]; run its loops with [`MatchmakingService::spawn_background`].
    pub fn new(
        store: Arc<dyn MatchStore>,
        session: SessionClient,
        config: MatchmakingConfig,
    ) -> MatchmakingService {
        MatchmakingService {
            inner: Arc::new(Inner {
                store,
                session,
                config,
                computer_added: Notify::new(),
                stats: Arc::new(DriverStats::default()),
                settled: tournament::SettledRounds::default(),
            }),
        }
    }

    /// The tonic service to add to a gRPC server (internal port only).
    pub fn server(&self) -> MatchmakingServiceServer<MatchmakingService> {
        MatchmakingServiceServer::new(self.clone())
    }

    /// What the computer driver of this process did so far.
    pub fn driver_stats(&self) -> Arc<DriverStats> {
        self.inner.stats.clone()
    }

    /// Starts the three background loops (pairing and expiry, the ended-games feed, the computer
    /// seats' driver); each stops when `shutdown` is cancelled.
    pub fn spawn_background(&self, shutdown: CancellationToken) -> Vec<JoinHandle<()>> {
        vec![
            tokio::spawn(self.clone().run_pairing(shutdown.clone())),
            tokio::spawn(self.clone().run_feed(shutdown.clone())),
            tokio::spawn(self.clone().run_computer_driver(shutdown)),
        ]
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MatchStore> {
        &self.inner.store
    }

    /// The settings.
    pub fn config(&self) -> &MatchmakingConfig {
        &self.inner.config
    }

    /// Seats `matches`, up to [`SEATS_AT_ONCE`] at a time, logging `failed` for each that could
    /// not be (it stays pending and is retried by a later round).
    ///
    /// Why at once: seating one match waits for two durable commits in sequence (the game's
    /// creation, then the match's completion), about 3.5 ms on Postgres; one after the other, a
    /// round could seat fewer than 300 pairs a second, and a backlog made every round longer
    /// while nobody heard of a match until theirs was seated. Together their commits share the
    /// session's and the store's group commits.
    async fn seat_all(&self, matches: Vec<Match>, failed: &'static str) {
        futures_util::stream::iter(matches)
            .for_each_concurrent(SEATS_AT_ONCE, |m| async move {
                if let Err(status) = self.seat(&m).await {
                    tracing::warn!(match_id = %m.match_id, %status, "{failed}");
                }
            })
            .await;
    }

    /// Creates (idempotently: the match id is the creation key) the game of a match and records
    /// it, telling both players.
    async fn seat(&self, m: &Match) -> Result<Uuid, Status> {
        let mut session = self.inner.session.clone();
        let created = session
            .create_game(pb::CreateGameRequest {
                south_player: m.south_player.clone(),
                north_player: m.north_player.clone(),
                rules: m.rules.clone(),
                time_control: Some(pb::TimeControl {
                    name: m.time_control.clone(),
                    ..Default::default()
                }),
                idempotency_key: format!("match:{}", m.match_id),
            })
            .await?
            .into_inner();
        let game_id = created_game_id(&created)?;
        self.inner
            .store
            .complete_match(m.match_id, game_id, self.inner.config.clock.now_unix_ms())
            .await
            .map_err(match_error_status)?;
        Ok(game_id)
    }

    /// One round of the pairing loop: expire, start the organisers' bulks whose time has come,
    /// pair every queue, seat the matches, retry matches left without a game, count the waiting
    /// tickets.
    pub async fn pairing_round(&self) -> Result<usize, MatchError> {
        let store = &self.inner.store;
        let now = self.inner.config.clock.now_unix_ms();
        store.expire(now).await?;
        // Before the bulks: a round paired now to start now is started in this same round.
        self.tournament_round(now).await;
        // First, so a bulk starts as close to its time as the loop's interval allows.
        let due = store.due_matches(now, DUE_PER_ROUND).await?;
        if !due.is_empty() {
            tracing::info!(games = due.len(), "starting the games of organisers' bulks");
        }
        self.seat_all(
            due,
            "could not create the game of a bulk's pair; retrying next round",
        )
        .await;
        let mut made = 0;
        for queue in store.waiting_queues().await? {
            let window = self.inner.config.window;
            let pairer = move |waiting: &[Ticket]| {
                if waiting.first().is_some_and(|t| t.queue.rated) {
                    pair_rated(waiting, now, &window)
                } else {
                    pair_casual(waiting)
                }
            };
            let queue_type = if queue.rated { "rated" } else { "casual" };
            let mut matches = Vec::new();
            for (m, south, north) in store.pair(&queue, now, &pairer).await? {
                for t in [&south, &north] {
                    metrics::histogram!(names::MATCHMAKING_WAIT_SECONDS, names::QUEUE_TYPE => queue_type)
                        .record(now.saturating_sub(t.enqueued_ms) as f64 / 1000.0);
                }
                metrics::counter!(names::MATCHES_TOTAL, names::KIND => queue_type).increment(1);
                made += 1;
                matches.push(m);
            }
            self.seat_all(
                matches,
                "could not create the game of a match; retrying later",
            )
            .await;
        }
        let before = now.saturating_sub(ms_of(self.inner.config.pending_match_retry));
        let pending = store.pending_matches(before).await?;
        self.seat_all(pending, "could not create the game of a pending match")
            .await;
        let (rated, casual) = store.waiting_counts().await?;
        metrics::gauge!(names::MATCHMAKING_TICKETS_WAITING, names::QUEUE_TYPE => "rated")
            .set(rated as f64);
        metrics::gauge!(names::MATCHMAKING_TICKETS_WAITING, names::QUEUE_TYPE => "casual")
            .set(casual as f64);
        Ok(made)
    }

    /// Advances every running tournament by one step ([`crate::tournament::progress`]): pairs
    /// and stores the next round's bulk once the round before has ended (to start the
    /// tournament's pause later; the first round at its start), or marks it finished after the
    /// last. A tournament that cannot go on is logged and left as it is; the others, and the
    /// rest of the pairing round, go on.
    pub async fn tournament_round(&self, now: u64) {
        let running = match self
            .inner
            .store
            .running_tournaments(TOURNAMENTS_PER_ROUND)
            .await
        {
            Ok(running) => running,
            Err(error) => {
                tracing::warn!(%error, "could not read the running tournaments");
                return;
            }
        };
        for t in running {
            if let Err(error) = self.advance_tournament(&t, now).await {
                tracing::warn!(tournament_id = %t.tournament_id, %error, "could not advance a tournament; retrying next round");
            }
        }
    }

    /// One step of one tournament ([`MatchmakingService::tournament_round`]).
    async fn advance_tournament(&self, t: &Tournament, now: u64) -> Result<(), MatchError> {
        let store = &self.inner.store;
        let rounds = tournament::round_bulks(&**store, t, &self.inner.settled).await?;
        let progress = match tournament::progress(t, &rounds, now) {
            Ok(progress) => progress,
            Err(error) => {
                tracing::error!(tournament_id = %t.tournament_id, %error, "a tournament cannot go on");
                return Ok(());
            }
        };
        match progress.next {
            Step::Wait => {}
            Step::Finished => {
                let notices = announce::finished(t, &progress);
                if store
                    .finish_tournament(&t.tournament_id, now, notices)
                    .await?
                {
                    tracing::info!(tournament_id = %t.tournament_id, rounds = progress.made, "tournament finished");
                }
                self.inner.settled.forget(&t.tournament_id);
            }
            // Round 1 is paired at the start, from the entrants then (players of a
            // tournament open to them join until shortly before).
            Step::Pair(_) if progress.made == 0 && now < t.start_ms => {}
            Step::Pair(ref pairing) => {
                let round = progress.made + 1;
                let start_ms = match round {
                    1 => t.start_ms.max(now),
                    _ => now.saturating_add(t.pause_ms),
                };
                let bulk = NewBulk {
                    bulk_id: round_bulk_id(&t.tournament_id, round),
                    organiser: t.organiser.clone(),
                    rules: t.rules.clone(),
                    time_control: t.time_control.clone(),
                    rated: t.rated,
                    start_ms,
                    created_ms: now,
                    pairs: pairing
                        .games
                        .iter()
                        .map(|p| (p.first.clone(), p.second.clone()))
                        .collect(),
                };
                let notices = announce::round_paired(t, &progress, pairing, round, start_ms);
                match store.create_bulk_noting(bulk, notices).await {
                    // Another process paired it a moment before (its start may differ).
                    Ok(_) | Err(MatchError::AlreadyExists(..)) => {}
                    Err(error) => return Err(error),
                }
                tracing::info!(tournament_id = %t.tournament_id, round, games = pairing.games.len(), bye = ?pairing.bye, start_ms, "tournament round paired");
            }
        }
        Ok(())
    }

    async fn run_pairing(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.inner.config.pairing_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => {}
            }
            if shutdown.is_cancelled() {
                return;
            }
            if let Err(error) = self.pairing_round().await {
                tracing::warn!(%error, "pairing round failed");
            }
        }
    }

    /// Reads the session's ended-games feed once from the stored position: settles ratings and
    /// seats players again. Returns how many games were read.
    pub async fn feed_round(&self) -> Result<usize, Status> {
        let store = &self.inner.store;
        let mut cursor = store.feed_cursor().await.map_err(match_error_status)?;
        let mut session = self.inner.session.clone();
        let games = session
            .list_ended_games(pb::ListEndedGamesRequest {
                after_cursor: cursor,
                limit: 200,
            })
            .await?
            .into_inner()
            .games;
        for game in &games {
            match ended_game_from_proto(game) {
                Ok(ended) => {
                    let now = self.inner.config.clock.now_unix_ms();
                    let expires = now + ms_of(self.inner.config.requeue_ttl);
                    let effect = policy::handle_ended_game(
                        &**store,
                        &ended,
                        now,
                        expires,
                        &self.inner.config.rating_integrity,
                    )
                    .await
                    .map_err(match_error_status)?;
                    if !effect.already_handled
                        && (effect.ratings.is_some() || !effect.requeued.is_empty())
                    {
                        tracing::info!(game_id = %ended.game_id, rated = effect.ratings.is_some(), requeued = effect.requeued.len(), "ended game handled");
                    }
                }
                Err(error) => tracing::warn!(%error, "skipping a malformed ended game"),
            }
            cursor = cursor.max(game.cursor);
            store
                .advance_feed(cursor)
                .await
                .map_err(match_error_status)?;
        }
        Ok(games.len())
    }

    async fn run_feed(self, shutdown: CancellationToken) {
        loop {
            let read = match self.feed_round().await {
                Ok(read) => read,
                Err(status) => {
                    tracing::warn!(%status, "reading the ended-games feed failed");
                    0
                }
            };
            if read > 0 {
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.inner.config.feed_interval) => {}
                () = shutdown.cancelled() => {}
            }
            if shutdown.is_cancelled() {
                return;
            }
        }
    }

    async fn run_computer_driver(self, shutdown: CancellationToken) {
        let config = &self.inner.config;
        loop {
            let now = now_ms();
            let claimed = self
                .inner
                .store
                .claim_computer_game(&config.process_id, now, now + ms_of(config.computer_lease))
                .await;
            match claimed {
                Ok(Some(game)) => {
                    tokio::spawn(driver::drive(
                        self.inner.store.clone(),
                        self.inner.session.clone(),
                        game,
                        config.process_id.clone(),
                        config.computer_lease,
                        self.inner.stats.clone(),
                        // Each game's driver stops with the loop that claimed it.
                        shutdown.child_token(),
                    ));
                    continue;
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "claiming a computer game failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(config.computer_scan_interval) => {}
                _ = self.inner.computer_added.notified() => {}
                () = shutdown.cancelled() => {}
            }
            if shutdown.is_cancelled() {
                return;
            }
        }
    }

    fn invite_to_proto(&self, invite: &Invite) -> pb::Invite {
        pb::Invite {
            code: invite.code.clone(),
            link: format!(
                "{}/{}",
                self.inner.config.invite_base_url.trim_end_matches('/'),
                invite.code
            ),
            player: invite.player.clone(),
            rules: invite.rules.clone(),
            time_control: invite.time_control.clone(),
            state: match invite.state {
                InviteState::Open => pb::InviteState::Open,
                InviteState::Accepted => pb::InviteState::Accepted,
                InviteState::Cancelled => pb::InviteState::Cancelled,
                InviteState::Expired => pb::InviteState::Expired,
            } as i32,
            expires_at_unix_ms: invite.expires_ms,
            game_id: invite.game_id.map(|g| g.to_string()).unwrap_or_default(),
        }
    }
}

/// The code in an accept request: a bare code or a link ending in one, any case.
fn code_of(text: &str) -> Result<String, Status> {
    // A code, or a link ending in one.
    self::text::required("code", text, TextKind::Rules)?;
    let code = text
        .trim()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    if code.len() != CODE_LEN || !code.bytes().all(|b| CODE_ALPHABET.contains(&b)) {
        return Err(ApiError::invalid_field(
            "code",
            format!(
                "{} is not an invite code ({CODE_LEN} letters and digits) or link",
                quote(text)
            ),
        )
        .into());
    }
    Ok(code)
}

type LobbyStream = ReceiverStream<Result<pb::WatchPlayerResponse, Status>>;

#[tonic::async_trait]
impl MatchmakingApi for MatchmakingService {
    async fn list_tournaments(
        &self,
        request: Request<pb::ListTournamentsRequest>,
    ) -> Result<Response<pb::ListTournamentsResponse>, Status> {
        Ok(Response::new(
            self.tournaments_for(request.into_inner()).await?,
        ))
    }

    async fn join_tournament(
        &self,
        request: Request<pb::JoinTournamentRequest>,
    ) -> Result<Response<pb::JoinTournamentResponse>, Status> {
        Ok(Response::new(self.join_for(request.into_inner()).await?))
    }

    async fn withdraw_tournament(
        &self,
        request: Request<pb::WithdrawTournamentRequest>,
    ) -> Result<Response<pb::WithdrawTournamentResponse>, Status> {
        Ok(Response::new(
            self.withdraw_for(request.into_inner()).await?,
        ))
    }

    async fn show_tournament(
        &self,
        request: Request<pb::ShowTournamentRequest>,
    ) -> Result<Response<pb::ShowTournamentResponse>, Status> {
        Ok(Response::new(self.show_for(request.into_inner()).await?))
    }

    async fn enqueue(
        &self,
        request: Request<pb::EnqueueRequest>,
    ) -> Result<Response<pb::EnqueueResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        check_id("ticket_id", &r.ticket_id)?;
        let queue = r
            .queue
            .ok_or_else(|| Status::from(ApiError::missing_field("queue")))?;
        let rules = parse_rules("queue.rules", &queue.rules)?;
        let time_control = parse_time_control("queue.time_control", &queue.time_control, "online")?;
        let config = &self.inner.config;
        let ttl = match r.ttl_seconds {
            0 => config.ticket_ttl,
            s if Duration::from_secs(u64::from(s)) > config.max_ticket_ttl => {
                return Err(ApiError::invalid_field(
                    "ttl_seconds",
                    format!(
                        "{s} is longer than the longest allowed, {} s",
                        config.max_ticket_ttl.as_secs()
                    ),
                )
                .into());
            }
            s => Duration::from_secs(u64::from(s)),
        };
        let store = &self.inner.store;
        if let Some(existing) = store
            .ticket(&r.player, &r.ticket_id)
            .await
            .map_err(match_error_status)?
        {
            return Ok(Response::new(pb::EnqueueResponse {
                ticket: Some(ticket_to_proto(&existing)),
            }));
        }
        let (rating, _) = store.rating(&r.player).await.map_err(match_error_status)?;
        let now = self.inner.config.clock.now_unix_ms();
        let ticket = store
            .enqueue(Ticket {
                player: r.player,
                ticket_id: r.ticket_id,
                queue: Queue {
                    rules: rules.name(),
                    time_control,
                    rated: queue.rated,
                },
                state: TicketState::Waiting,
                priority: false,
                rating: rating.rating,
                enqueued_ms: now,
                expires_ms: now + ms_of(ttl),
                match_id: None,
                game_id: None,
            })
            .await
            .map_err(match_error_status)?;
        Ok(Response::new(pb::EnqueueResponse {
            ticket: Some(ticket_to_proto(&ticket)),
        }))
    }

    async fn cancel_ticket(
        &self,
        request: Request<pb::CancelTicketRequest>,
    ) -> Result<Response<pb::CancelTicketResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        check_id("ticket_id", &r.ticket_id)?;
        let ticket = self
            .inner
            .store
            .cancel_ticket(&r.player, &r.ticket_id)
            .await
            .map_err(match_error_status)?;
        Ok(Response::new(pb::CancelTicketResponse {
            ticket: Some(ticket_to_proto(&ticket)),
        }))
    }

    async fn get_ticket(
        &self,
        request: Request<pb::GetTicketRequest>,
    ) -> Result<Response<pb::GetTicketResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        check_id("ticket_id", &r.ticket_id)?;
        let ticket = self
            .inner
            .store
            .ticket(&r.player, &r.ticket_id)
            .await
            .map_err(match_error_status)?
            .ok_or_else(|| {
                Status::from(ApiError::new(
                    Reason::TicketNotFound,
                    format!("player {} has no ticket {}", r.player, quote(&r.ticket_id)),
                ))
            })?;
        Ok(Response::new(pb::GetTicketResponse {
            ticket: Some(ticket_to_proto(&ticket)),
        }))
    }

    async fn create_invite(
        &self,
        request: Request<pb::CreateInviteRequest>,
    ) -> Result<Response<pb::CreateInviteResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        check_id("invite_id", &r.invite_id)?;
        let rules = parse_rules("rules", &r.rules)?;
        let time_control = parse_time_control("time_control", &r.time_control, "relaxed")?;
        let expires_ms =
            self.inner.config.clock.now_unix_ms() + ms_of(self.inner.config.invite_ttl);
        // A drawn code may be taken: draw again (31^6 codes make a second clash rare).
        for _ in 0..8 {
            let invite = Invite {
                code: new_code(),
                player: r.player.clone(),
                invite_id: r.invite_id.clone(),
                rules: rules.name(),
                time_control: time_control.clone(),
                state: InviteState::Open,
                expires_ms,
                match_id: None,
                accepted_by: None,
                game_id: None,
            };
            match self.inner.store.create_invite(invite).await {
                Ok(stored) => {
                    return Ok(Response::new(pb::CreateInviteResponse {
                        invite: Some(self.invite_to_proto(&stored)),
                    }));
                }
                Err(MatchError::AlreadyExists(..)) => continue,
                Err(error) => return Err(match_error_status(error)),
            }
        }
        Err(ApiError::new(
            Reason::InviteCodesExhausted,
            "could not draw a free invite code; try again",
        )
        .into())
    }

    async fn accept_invite(
        &self,
        request: Request<pb::AcceptInviteRequest>,
    ) -> Result<Response<pb::AcceptInviteResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        let code = code_of(&r.code)?;
        let m = self
            .inner
            .store
            .accept_invite(&code, &r.player, self.inner.config.clock.now_unix_ms())
            .await
            .map_err(match_error_status)?;
        let game_id = match m.game_id {
            Some(game_id) => game_id,
            None => {
                let game_id = self.seat(&m).await?;
                metrics::counter!(names::MATCHES_TOTAL, names::KIND => "invite").increment(1);
                game_id
            }
        };
        Ok(Response::new(pb::AcceptInviteResponse {
            game_id: game_id.to_string(),
            seat: side_to_proto(Side::North),
            opponent: m.south_player,
        }))
    }

    async fn cancel_invite(
        &self,
        request: Request<pb::CancelInviteRequest>,
    ) -> Result<Response<pb::CancelInviteResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        let code = code_of(&r.code)?;
        let invite = self
            .inner
            .store
            .cancel_invite(&r.player, &code)
            .await
            .map_err(match_error_status)?;
        Ok(Response::new(pb::CancelInviteResponse {
            invite: Some(self.invite_to_proto(&invite)),
        }))
    }

    async fn play_computer(
        &self,
        request: Request<pb::PlayComputerRequest>,
    ) -> Result<Response<pb::PlayComputerResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        check_id("request_id", &r.request_id)?;
        if r.player == COMPUTER_PLAYER {
            return Err(ApiError::invalid_field(
                "player",
                format!("{COMPUTER_PLAYER:?} is the computer's own id"),
            )
            .into());
        }
        let rules = parse_rules("rules", &r.rules)?;
        let level = parse_level("level", &r.level)?;
        let time_control = parse_time_control("time_control", &r.time_control, "relaxed")?;
        let seat = match r.seat {
            0 => Side::South,
            s => wire::side_from_proto("seat", s).map_err(|e| Status::from(ApiError::from(e)))?,
        };
        let store = &self.inner.store;
        if let Some(existing) = store
            .computer_game(&r.player, &r.request_id)
            .await
            .map_err(match_error_status)?
        {
            return Ok(Response::new(pb::PlayComputerResponse {
                game_id: existing.game_id.to_string(),
                seat: side_to_proto(existing.side.other()),
                level: existing.level.name().to_owned(),
            }));
        }
        let (south, north) = match seat {
            Side::South => (r.player.clone(), COMPUTER_PLAYER.to_owned()),
            Side::North => (COMPUTER_PLAYER.to_owned(), r.player.clone()),
        };
        let key = format!(
            "computer:{}",
            stable_digest(&format!("{}\u{0}{}", r.player, r.request_id))
        );
        let mut session = self.inner.session.clone();
        let created = session
            .create_game(pb::CreateGameRequest {
                south_player: south,
                north_player: north,
                rules: rules.name(),
                time_control: Some(pb::TimeControl {
                    name: time_control,
                    ..Default::default()
                }),
                idempotency_key: key,
            })
            .await?
            .into_inner();
        let game_id = created_game_id(&created)?;
        let (a, b) = Uuid::new_v4().as_u64_pair();
        let game = store
            .add_computer_game(ComputerGame {
                game_id,
                player: r.player,
                request_id: r.request_id,
                rules: rules.name(),
                side: seat.other(),
                seed: a ^ b,
                level,
            })
            .await
            .map_err(match_error_status)?;
        if !created.replayed {
            metrics::counter!(names::MATCHES_TOTAL, names::KIND => "computer").increment(1);
        }
        self.inner.computer_added.notify_one();
        Ok(Response::new(pb::PlayComputerResponse {
            game_id: game.game_id.to_string(),
            seat: side_to_proto(game.side.other()),
            level: game.level.name().to_owned(),
        }))
    }

    async fn get_rating(
        &self,
        request: Request<pb::GetRatingRequest>,
    ) -> Result<Response<pb::GetRatingResponse>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        let (rating, games) = self
            .inner
            .store
            .rating(&r.player)
            .await
            .map_err(match_error_status)?;
        Ok(Response::new(pb::GetRatingResponse {
            rating: Some(pb::Rating {
                rating: rating.rating,
                deviation: rating.deviation,
                volatility: rating.volatility,
                games,
            }),
        }))
    }

    type WatchPlayerStream = LobbyStream;

    async fn watch_player(
        &self,
        request: Request<pb::WatchPlayerRequest>,
    ) -> Result<Response<Self::WatchPlayerStream>, Status> {
        let r = request.into_inner();
        check_id("player", &r.player)?;
        let store = self.inner.store.clone();
        // Subscribed before the first read: nothing committed after that read is missed.
        let mut wakeups = store.lobby_wakeups().await.map_err(match_error_status)?;
        let (tx, rx) = mpsc::channel(64);
        let player = r.player;
        let mut after = r.after_seq;
        tokio::spawn(async move {
            loop {
                let events = match store.lobby_events(&player, after, LOBBY_PAGE).await {
                    Ok(events) => events,
                    Err(error) => {
                        let _ = tx.send(Err(match_error_status(error))).await;
                        return;
                    }
                };
                let full = events.len() == LOBBY_PAGE;
                for event in events {
                    after = event.seq;
                    let item = pb::WatchPlayerResponse {
                        event: Some(lobby_event_to_proto(&event)),
                    };
                    if tx.send(Ok(item)).await.is_err() {
                        return;
                    }
                }
                if full {
                    continue;
                }
                // Wait for a wake-up about this player (or anyone's, after a lost LISTEN).
                loop {
                    tokio::select! {
                        woke = wakeups.recv() => match woke {
                            Ok(who) if who == player || who.is_empty() => break,
                            Ok(_) => {}
                            Err(broadcast::error::RecvError::Lagged(_)) => break,
                            Err(broadcast::error::RecvError::Closed) => return,
                        },
                        _ = tx.closed() => return,
                    }
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_games_read_from_the_feed() {
        let id = Uuid::now_v7();
        let game = |winner: pb::Side, reason: pb::EndReason, lost: Vec<i32>| pb::EndedGame {
            game_id: id.to_string(),
            outcome: Some(pb::Outcome {
                winner: winner as i32,
                reason: reason as i32,
            }),
            seats_lost: lost,
            ..Default::default()
        };
        let won = game(pb::Side::North, pb::EndReason::FlagCaptured, vec![]);
        assert_eq!(
            ended_game_from_proto(&won).unwrap().result,
            EndedResult::Won(Side::North)
        );
        let drawn = game(pb::Side::Unspecified, pb::EndReason::AgreedDraw, vec![]);
        assert_eq!(
            ended_game_from_proto(&drawn).unwrap().result,
            EndedResult::Drawn
        );
        let lost = game(
            pb::Side::Unspecified,
            pb::EndReason::SeatLost,
            vec![pb::Side::South as i32],
        );
        assert_eq!(
            ended_game_from_proto(&lost).unwrap().result,
            EndedResult::SeatLost(vec![Side::South])
        );
        let aborted = game(pb::Side::Unspecified, pb::EndReason::Aborted, vec![]);
        assert_eq!(
            ended_game_from_proto(&aborted).unwrap().result,
            EndedResult::Aborted,
            "an operator's abort is no draw"
        );
        let no_outcome = pb::EndedGame {
            outcome: None,
            ..won.clone()
        };
        assert!(
            ended_game_from_proto(&no_outcome).is_err(),
            "never taken for a draw"
        );
        let bad_id = pb::EndedGame {
            game_id: "x".into(),
            ..won
        };
        assert!(ended_game_from_proto(&bad_id).is_err());
    }

    #[test]
    fn codes_are_read_from_codes_and_links() {
        assert_eq!(code_of("k7qx2m").unwrap(), "K7QX2M");
        assert_eq!(
            code_of("https://x.example/invite/K7QX2M/").unwrap(),
            "K7QX2M"
        );
        assert!(code_of("K7QX2").is_err());
        assert!(code_of("K7QX2O").is_err(), "O is not in the alphabet");
        let code = new_code();
        assert_eq!(code_of(&code).unwrap(), code);
    }

    #[test]
    fn created_game_ids_must_be_uuids() {
        let id = Uuid::now_v7();
        let answer = |game_id: String| pb::CreateGameResponse {
            game_id,
            ..Default::default()
        };
        assert_eq!(created_game_id(&answer(id.to_string())).unwrap(), id);
        let status = created_game_id(&answer("game-1".into())).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Internal);
    }

    #[test]
    fn digests_are_stable_and_distinct() {
        assert_eq!(stable_digest("a\u{0}b"), stable_digest("a\u{0}b"));
        assert_ne!(stable_digest("a\u{0}bc"), stable_digest("ab\u{0}c"));
        assert_eq!(stable_digest("x").len(), 32);
    }
}
