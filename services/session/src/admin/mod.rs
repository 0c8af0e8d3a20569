//! `AdminService` (`admin.proto`): operators find, inspect and stop games and read the audit log
//! of who did. Served by the session process beside `SessionService` (the internal port), on the
//! same [`SessionService`] (its store, cache and command path), behind its own authentication
//! ([`auth`]). docs/admin.md.
//!
//! The audit: an inspection is written to the log *before* the game is shown (if the entry cannot
//! be written, nothing is shown); an abort is written *after* the command path answered, with how
//! it went (`applied at version N`, `replayed at version N`, `refused: REASON`), so the entry and
//! the game agree. A crash between the abort's commit and its entry leaves the abort without an
//! entry until the operator retries with the same idempotency key (the retry gets the first answer
//! and writes the entry, `replayed`).

/// Who may use it: the operator tokens (`crates/operator-auth`), shared with the other operator APIs.
pub use hidden_front_operator_auth as auth;
mod requests;

use crate::errors::store_error_status;
use crate::request::{Actor, Context, OperatorAction, parse_game_id, time_control_to_proto};
use crate::service::SessionService;
use auth::{AdminTokens, Operator};
use hidden_front_api_error::{ApiError, ErrorSummary, Reason};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::admin_service_server::AdminService as AdminApi;
use hidden_front_rules::{Command, Phase, reveal};
use hidden_front_store::{
    AuditAction, AuditEntry, FoundGame, GameFilter, NewAuditEntry, TimerKind,
};
use hidden_front_time::unix_ms;
use hidden_front_wire as wire;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// An abort refused `WRONG_PHASE` as what it means for an operator. The engine only refuses an
/// abort once the game has ended (it aborts a game in deployment and in play alike), but its
/// message says "this needs the play phase", which reads as if a game in deployment could not
/// be aborted. The reason stays `WRONG_PHASE`; any other refusal passes through as it is.
fn ended_refusal(status: Status, game_id: uuid::Uuid) -> Status {
    if ErrorSummary::of(&status).reason != Reason::WrongPhase.as_str() {
        return status;
    }
    ApiError::new(
        Reason::WrongPhase,
        format!(
            "game {game_id} has already ended: only a game in deployment or in play can be \
             aborted"
        ),
    )
    .into()
}

/// Events read per store call while gathering a game's log for an inspection.
const INSPECT_PAGE: usize = 256;

/// The admin API over a session: the operators' door, with its own credentials.
pub struct AdminService {
    session: Arc<SessionService>,
    tokens: AdminTokens,
}

impl AdminService {
    /// The admin API of `session`, open to the operators of `tokens` (none: every call is
    /// refused `FAILED_PRECONDITION`).
    pub fn new(session: Arc<SessionService>, tokens: AdminTokens) -> AdminService {
        AdminService { session, tokens }
    }

    /// The operator of the request, or its refusal.
    fn operator<T>(&self, request: &Request<T>) -> Result<Operator, Status> {
        self.tokens.authenticate(request.metadata())
    }

    /// Appends an audit entry.
    async fn audit(&self, entry: NewAuditEntry<'_>) -> Result<AuditEntry, Status> {
        self.session
            .store
            .append_audit(entry)
            .await
            .map_err(|e| store_error_status(&e))
    }

    async fn find(&self, request: pb::FindGamesRequest) -> Result<pb::FindGamesResponse, Status> {
        let filter = requests::game_filter(&request, self.session.config.clock.now())?;
        let found = self
            .session
            .store
            .find_games(&filter)
            .await
            .map_err(|e| store_error_status(&e))?;
        let next_cursor = match found.last() {
            Some(last) if found.len() == filter.limit => requests::cursor_text(&last.cursor()),
            _ => String::new(),
        };
        let mut games = Vec::with_capacity(found.len());
        for game in &found {
            games.push(self.found_game(game).await?);
        }
        Ok(pb::FindGamesResponse { games, next_cursor })
    }

    /// The wire form of a found game, with the outcome of one that ended (from its snapshot).
    async fn found_game(&self, found: &FoundGame) -> Result<pb::FoundGame, Status> {
        let meta = &found.summary.meta;
        let outcome = if found.summary.phase == Phase::Ended {
            self.session
                .load(meta.game_id, false)
                .await?
                .game
                .outcome()
                .map(wire::outcome_to_proto)
        } else {
            None
        };
        Ok(pb::FoundGame {
            game_id: meta.game_id.to_string(),
            rules: meta.rules.clone(),
            time_control: Some(time_control_to_proto(&meta.time_control)),
            south_player: meta.south_player.clone(),
            north_player: meta.north_player.clone(),
            phase: wire::phase_to_proto(found.summary.phase) as i32,
            version: found.summary.version,
            created_unix_millis: unix_ms(found.created_at),
            last_event_unix_millis: unix_ms(found.last_event_at),
            outcome,
        })
    }

    async fn inspect(
        &self,
        operator: &Operator,
        request: pb::InspectGameRequest,
    ) -> Result<pb::InspectGameResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        requests::reason("reason", &request.reason)?;
        let store = &self.session.store;
        let found = store
            .find_games(&GameFilter {
                game_id: Some(game_id),
                limit: 1,
                ..GameFilter::default()
            })
            .await
            .map_err(|e| store_error_status(&e))?;
        let Some(found) = found.first() else {
            // Nothing is shown, so nothing is audited.
            return Err(store_error_status(
                &hidden_front_store::StoreError::NotFound(game_id),
            ));
        };
        // Audited before anything of the game is read out.
        let audit = self
            .audit(NewAuditEntry {
                operator: &operator.name,
                action: AuditAction::Inspect,
                game_id,
                reason: &request.reason,
                outcome: "ok",
            })
            .await?;
        tracing::info!(operator = %operator.name, %game_id, "admin inspected a game");
        let record = self.session.load(game_id, true).await?;
        let end = reveal(&record.game).unwrap_or_default();
        let rules = *record.game.rules();
        let id = game_id.to_string();
        let mut events = Vec::new();
        loop {
            let from = events.len() as u64 + 1;
            let page = store
                .events(game_id, from, INSPECT_PAGE)
                .await
                .map_err(|e| store_error_status(&e))?;
            let done = page.len() < INSPECT_PAGE;
            events.extend(page.iter().map(|stored| {
                wire::engine_event_to_proto(&rules, &id, stored.seq, &stored.event, &end)
            }));
            if done || events.len() as u64 >= record.version {
                break;
            }
        }
        let timers = store
            .timers_of(game_id)
            .await
            .map_err(|e| store_error_status(&e))?
            .iter()
            .map(|timer| pb::ArmedTimer {
                kind: match timer.kind {
                    TimerKind::Deployment => pb::TimerKind::Deployment,
                    TimerKind::Move => pb::TimerKind::Move,
                    TimerKind::Reconnect => pb::TimerKind::Reconnect,
                } as i32,
                side: wire::side_to_proto(timer.side) as i32,
                armed_version: timer.armed_version,
                deadline_unix_millis: timer.fire_at_unix_millis(),
            })
            .collect();
        let connected = store
            .presence(game_id, self.session.config.clock.now())
            .await
            .map_err(|e| store_error_status(&e))?
            .connected();
        let mut game = self.found_game(found).await?;
        // The log may have grown since the search: show the state the events lead to.
        game.version = events.len() as u64;
        game.phase = wire::phase_to_proto(record.game.phase()) as i32;
        game.outcome = record.game.outcome().map(wire::outcome_to_proto);
        Ok(pb::InspectGameResponse {
            game: Some(game),
            events,
            timers,
            south_connected: connected[0],
            north_connected: connected[1],
            audit: Some(audit_to_proto(&audit)),
        })
    }

    async fn abort(
        &self,
        operator: &Operator,
        request: pb::AbortGameRequest,
    ) -> Result<pb::AbortGameResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        requests::reason("reason", &request.reason)?;
        requests::idempotency_key("idempotency_key", &request.idempotency_key)?;
        let ctx = Context {
            game_id,
            actor: Actor::Operator(OperatorAction {
                operator: operator.name.clone(),
                reason: request.reason.clone(),
            }),
            key: format!("admin:{}", request.idempotency_key),
            expected_version: None,
            fired: None,
        };
        let result = self
            .session
            .execute(&ctx, |_| Ok(Command::Abort))
            .await
            .map_err(|status| ended_refusal(status, game_id));
        let outcome_text = match &result {
            Ok(answer) if answer.replayed => format!("replayed at version {}", answer.version),
            Ok(answer) => format!("applied at version {}", answer.version),
            Err(status) => format!("refused: {}", ErrorSummary::of(status).reason),
        };
        tracing::info!(operator = %operator.name, %game_id, outcome = %outcome_text, "admin abort");
        let audit = self
            .audit(NewAuditEntry {
                operator: &operator.name,
                action: AuditAction::Abort,
                game_id,
                reason: &request.reason,
                outcome: &outcome_text,
            })
            .await;
        let answer = result?;
        let audit = audit?;
        let outcome = answer.events.iter().find_map(|event| match &event.event {
            Some(pb::game_event::Event::Ended(ended)) => ended.outcome,
            _ => None,
        });
        let outcome = match outcome {
            Some(outcome) => Some(outcome),
            // A replayed answer carries the first one's events; a game found already ended by
            // this key's first abort reads its outcome from the snapshot.
            None => self
                .session
                .load(game_id, false)
                .await?
                .game
                .outcome()
                .map(wire::outcome_to_proto),
        };
        Ok(pb::AbortGameResponse {
            version: answer.version,
            outcome,
            replayed: answer.replayed,
            audit: Some(audit_to_proto(&audit)),
        })
    }

    async fn audit_log(
        &self,
        request: pb::ListAuditLogRequest,
    ) -> Result<pb::ListAuditLogResponse, Status> {
        let query = requests::audit_query(&request)?;
        let entries = self
            .session
            .store
            .audit_log(&query)
            .await
            .map_err(|e| store_error_status(&e))?;
        Ok(pb::ListAuditLogResponse {
            entries: entries.iter().map(audit_to_proto).collect(),
        })
    }
}

/// The wire form of an audit entry.
fn audit_to_proto(entry: &AuditEntry) -> pb::AuditEntry {
    pb::AuditEntry {
        id: entry.id,
        at_unix_millis: unix_ms(entry.at),
        operator: entry.operator.clone(),
        action: entry.action.name().to_owned(),
        game_id: entry.game_id.to_string(),
        reason: entry.reason.clone(),
        outcome: entry.outcome.clone(),
    }
}

#[tonic::async_trait]
impl AdminApi for AdminService {
    async fn find_games(
        &self,
        request: Request<pb::FindGamesRequest>,
    ) -> Result<Response<pb::FindGamesResponse>, Status> {
        self.operator(&request)?;
        self.find(request.into_inner()).await.map(Response::new)
    }

    async fn inspect_game(
        &self,
        request: Request<pb::InspectGameRequest>,
    ) -> Result<Response<pb::InspectGameResponse>, Status> {
        let operator = self.operator(&request)?;
        self.inspect(&operator, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn abort_game(
        &self,
        request: Request<pb::AbortGameRequest>,
    ) -> Result<Response<pb::AbortGameResponse>, Status> {
        let operator = self.operator(&request)?;
        self.abort(&operator, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_audit_log(
        &self,
        request: Request<pb::ListAuditLogRequest>,
    ) -> Result<Response<pb::ListAuditLogResponse>, Status> {
        self.operator(&request)?;
        self.audit_log(request.into_inner())
            .await
            .map(Response::new)
    }
}
