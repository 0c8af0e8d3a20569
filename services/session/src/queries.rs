//! The read-only calls: `GetGame`, `ListGames`, `ListLegalMoves`, `ListEndedGames`. Every game
//! leaves through the engine's view for the asking viewer; the ended-games feed shows ended
//! games only, whose deployments are public.

use crate::errors::{invalid_field, store_error_status, wire_status};
use crate::request::{parse_game_id, time_control_to_proto, validate_player};
use crate::service::SessionService;
use crate::status::game_status;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Phase, Side, view};
use hidden_front_wire as wire;
use tonic::Status;

impl SessionService {
    /// `GetGame`: the game as `viewer` may see it, with presence and the public deadlines.
    pub(crate) async fn game_view(
        &self,
        request: pb::GetGameRequest,
    ) -> Result<pb::GetGameResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let viewer = wire::viewer_from_proto("viewer", request.viewer).map_err(wire_status)?;
        let observed = self.observe(game_id).await?;
        let record = &observed.record;
        let id = game_id.to_string();
        let mut game_view = wire::game_view(
            &view(&record.game, viewer),
            wire::Seats {
                game_id: &id,
                south_player: &record.meta.south_player,
                north_player: &record.meta.north_player,
            },
            record.version,
            time_control_to_proto(&record.meta.time_control),
        );
        // The status inside the view is the one the streams send (`status.rs`).
        let status = game_status(&observed);
        game_view.south_connected = status.south_connected;
        game_view.north_connected = status.north_connected;
        game_view.turn_deadline_unix_millis = status.turn_deadline_unix_millis;
        game_view.south_away_deadline_unix_millis = status.south_away_deadline_unix_millis;
        game_view.north_away_deadline_unix_millis = status.north_away_deadline_unix_millis;
        Ok(pb::GetGameResponse {
            game: Some(game_view),
        })
    }

    /// `ListGames`: a player's games, newest first, with the outcome of those that ended.
    pub(crate) async fn games_of_player(
        &self,
        request: pb::ListGamesRequest,
    ) -> Result<pb::ListGamesResponse, Status> {
        validate_player("player", &request.player)?;
        let limit = match request.limit {
            0 => 50,
            n if n <= 500 => n as usize,
            n => {
                return Err(invalid_field(
                    "limit",
                    format!("must be at most 500, got {n}"),
                ));
            }
        };
        let summaries = self
            .store
            .games_of_player(&request.player, limit)
            .await
            .map_err(|e| store_error_status(&e))?;
        let mut games = Vec::with_capacity(summaries.len());
        for summary in summaries {
            if request.active_only && summary.phase == Phase::Ended {
                continue;
            }
            let meta = &summary.meta;
            let (seat, opponent) = if meta.south_player == request.player {
                (Side::South, &meta.north_player)
            } else {
                (Side::North, &meta.south_player)
            };
            let outcome = if summary.phase == Phase::Ended {
                self.load(meta.game_id, false)
                    .await?
                    .game
                    .outcome()
                    .map(wire::outcome_to_proto)
            } else {
                None
            };
            games.push(pb::GameSummary {
                game_id: meta.game_id.to_string(),
                seat: wire::side_to_proto(seat) as i32,
                phase: wire::phase_to_proto(summary.phase) as i32,
                opponent: opponent.clone(),
                outcome,
                rules: meta.rules.clone(),
                version: summary.version,
            });
        }
        Ok(pb::ListGamesResponse { games })
    }

    /// `ListLegalMoves`: the moves `side` may make now (none unless it is their turn in play).
    pub(crate) async fn legal_moves(
        &self,
        request: pb::ListLegalMovesRequest,
    ) -> Result<pb::ListLegalMovesResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let side = wire::side_from_proto("side", request.side).map_err(wire_status)?;
        // From the cache only when it is at least as new as what the caller has seen: an answer
        // older than an event the caller saw would be a position it has left behind.
        let cached = request
            .min_version
            .and_then(|min| self.cache.get(game_id).filter(|r| r.version >= min));
        let record = match cached {
            Some(record) => record,
            None => self.load(game_id, true).await?,
        };
        let game = &record.game;
        let rules = *game.rules();
        let moves = if game.phase() == Phase::Play && game.to_move() == side {
            game.position()
                .legal_moves()
                .iter()
                .map(|mv| wire::move_to_proto(&rules, mv))
                .collect()
        } else {
            Vec::new()
        };
        Ok(pb::ListLegalMovesResponse {
            version: record.version,
            moves,
        })
    }

    /// The feed of ended games, as [`pb::EndedGame`]s.
    pub(crate) async fn ended_games(
        &self,
        request: pb::ListEndedGamesRequest,
    ) -> Result<pb::ListEndedGamesResponse, Status> {
        let limit = match request.limit {
            0 => 100,
            n if n <= 1000 => n as usize,
            n => {
                return Err(invalid_field(
                    "limit",
                    format!("must be at most 1000, got {n}"),
                ));
            }
        };
        let ended = self
            .store
            .ended_games(request.after_cursor, limit)
            .await
            .map_err(|e| store_error_status(&e))?;
        let games = ended
            .into_iter()
            .map(|entry| {
                let meta = &entry.record.meta;
                let game = &entry.record.game;
                let lost = game.seats_lost();
                pb::EndedGame {
                    cursor: entry.cursor,
                    game_id: meta.game_id.to_string(),
                    rules: meta.rules.clone(),
                    time_control: Some(time_control_to_proto(&meta.time_control)),
                    south_player: meta.south_player.clone(),
                    north_player: meta.north_player.clone(),
                    outcome: game.outcome().map(wire::outcome_to_proto),
                    seats_lost: Side::BOTH
                        .into_iter()
                        .filter(|side| lost[side.index()])
                        .map(|side| wire::side_to_proto(side) as i32)
                        .collect(),
                    plies: game.plies(),
                }
            })
            .collect();
        Ok(pb::ListEndedGamesResponse { games })
    }
}
