//! `CreateGame`: validates the seats, rules and time control, creates the game with the engine
//! and stores it with its deployment deadline.

use crate::command::fresh_rng;
use crate::counters::count_phase_change;
use crate::errors::{check_text, invalid_field, store_error_status};
use crate::request::{time_control_from_proto, validate_player};
use crate::service::SessionService;
use crate::timers;
use hidden_front_api_error::text::TextKind;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Game, Rules, Side};
use hidden_front_store::{GameMeta, GameRecord, lifecycle};
use hidden_front_wire as wire;
use std::sync::Arc;
use tonic::Status;
use uuid::Uuid;

impl SessionService {
    /// `CreateGame`: a new game with a random first mover and its deployment deadline armed
    /// in the same transaction; idempotent on the creation key.
    pub(crate) async fn create(
        &self,
        request: pb::CreateGameRequest,
    ) -> Result<pb::CreateGameResponse, Status> {
        validate_player("south_player", &request.south_player)?;
        validate_player("north_player", &request.north_player)?;
        if request.south_player == request.north_player {
            return Err(invalid_field(
                "north_player",
                "must be a different player from south_player",
            ));
        }
        check_text("idempotency_key", &request.idempotency_key, TextKind::Key)?;
        check_text("rules", &request.rules, TextKind::Rules)?;
        let rules_name = if request.rules.is_empty() {
            hidden_front_rules::rules::DEFAULT_RULES
        } else {
            request.rules.as_str()
        };
        let rules = Rules::parse(rules_name).map_err(|e| {
            Status::from(
                ApiError::new(Reason::UnknownRules, format!("rules: {e}"))
                    .with_violation("rules", e.to_string()),
            )
        })?;
        let time_control = time_control_from_proto(request.time_control)?;
        let mut rng = fresh_rng();
        let first_mover = if rng.below(2) == 0 {
            Side::South
        } else {
            Side::North
        };
        let (game, events) = Game::create(rules, first_mover, &mut rng);
        let key = if request.idempotency_key.is_empty() {
            Uuid::new_v4().to_string()
        } else {
            request.idempotency_key
        };
        let meta = GameMeta {
            // Placed by the store (on a sharded store, on the key's shard, so a retry with this
            // key meets the first creation).
            game_id: self.store.new_game_id(&key),
            rules: rules.name(),
            time_control,
            south_player: request.south_player,
            north_player: request.north_player,
        };
        // The deployment deadline is durable with the game itself, armed only once any outage
        // before it was accounted for (else the outage would move it too).
        self.serving().await?;
        let deadline = timers::deployment_timer(
            meta.game_id,
            &meta.time_control,
            events.len() as u64,
            self.config.clock.now(),
        );
        let created = self
            .store
            .create_armed(
                &key,
                &meta,
                &events,
                &game,
                &[deadline],
                &lifecycle::derive::creation_facts(meta.seats()),
            )
            .await
            .map_err(|e| store_error_status(&e))?;
        let record = if created.replayed {
            // Another creation with this key made the game: read what it wrote.
            self.load(created.game_id, true).await?
        } else {
            count_phase_change(None, game.phase());
            // The game as just written: cached, so its first commands (both seats' confirmations)
            // and this answer need no store read.
            let record = Arc::new(GameRecord {
                meta,
                version: events.len() as u64,
                game,
            });
            self.cache.insert(Arc::clone(&record));
            record
        };
        tracing::info!(game_id = %created.game_id, rules = %record.meta.rules, replayed = created.replayed, "game created");
        Ok(pb::CreateGameResponse {
            game_id: created.game_id.to_string(),
            version: if created.replayed {
                record.version
            } else {
                events.len() as u64
            },
            first_mover: wire::side_to_proto(record.game.first_mover()) as i32,
            replayed: created.replayed,
        })
    }
}
