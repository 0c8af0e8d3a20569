//! `ReportPresence`: gateways' leased reports of who is connected, and the reconnect deadline
//! each report re-arms.

use crate::errors::{check_text, invalid_field, missing_field, store_error_status, wire_status};
use crate::request::parse_game_id;
use crate::service::SessionService;
use crate::timers;
use hidden_front_api_error::text::TextKind;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Phase, Side};
use hidden_front_store::{GameRecord, Presence};
use hidden_front_wire as wire;
use std::time::{Duration, SystemTime};
use tonic::Status;

impl SessionService {
    /// Records a gateway's report of a player's connection (with its lease) and re-arms the
    /// side's time to come back; answers who counts as connected now.
    pub(crate) async fn record_presence(
        &self,
        request: pb::ReportPresenceRequest,
    ) -> Result<pb::ReportPresenceResponse, Status> {
        let game_id = parse_game_id("game_id", &request.game_id)?;
        let side = wire::side_from_proto("side", request.side).map_err(wire_status)?;
        if request.gateway_id.is_empty() {
            return Err(missing_field("gateway_id"));
        }
        check_text("gateway_id", &request.gateway_id, TextKind::Id)?;
        let lease = match request.lease_seconds {
            0 => self.config.default_presence_lease,
            s if s <= 3600 => Duration::from_secs(u64::from(s)),
            s => {
                return Err(invalid_field(
                    "lease_seconds",
                    format!("must be at most 3600, got {s}"),
                ));
            }
        };
        // The game must exist: presence for unknown games would grow the table without bound.
        let record = self.load(game_id, false).await?;
        let now = self.config.clock.now();
        let presence = self
            .store
            .report_presence(
                game_id,
                side,
                &request.gateway_id,
                request.connected,
                now,
                now + lease,
            )
            .await
            .map_err(|e| store_error_status(&e))?;
        self.arm_reconnect(&record, side, now, presence).await?;
        let connected = presence.connected();
        Ok(pb::ReportPresenceResponse {
            south_connected: connected[0],
            north_connected: connected[1],
        })
    }

    /// Arms `side`'s time to come back after a presence report heard at `reported_at`, with the
    /// game's presence after it: counted from the report, due no earlier than the side's
    /// connected leases end (see [`timers::reconnect_after_report`]).
    pub(crate) async fn arm_reconnect(
        &self,
        record: &GameRecord,
        side: Side,
        reported_at: SystemTime,
        presence: Presence,
    ) -> Result<(), Status> {
        if record.game.phase() == Phase::Ended {
            return Ok(());
        }
        let timer = timers::reconnect_after_report(
            record.meta.game_id,
            &record.meta.time_control,
            side,
            record.version,
            reported_at,
            presence.connected_until[side.index()],
        );
        self.store
            .arm_timer(&timer)
            .await
            .map_err(|e| store_error_status(&e))
    }
}
