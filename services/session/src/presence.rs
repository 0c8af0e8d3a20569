//! `ReportPresence`: gateways' leased reports of who is connected, and the reconnect deadline
//! each report re-arms.

use crate::errors::{check_text, invalid_field, missing_field, store_error_status, wire_status};
use crate::request::parse_game_id;
use crate::service::SessionService;
use crate::timers;
use hidden_front_api_error::text::TextKind;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Phase, Side};
use hidden_front_store::{ArmAfterReport, GameRecord, Timer};
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
        // A report re-arms a deadline: not before an outage before it was accounted for.
        self.serving().await?;
        // The game must exist: presence for unknown games would grow the table without bound.
        let record = self.load(game_id, false).await?;
        let now = self.config.clock.now();
        // The report re-arms the side's time to come back, in the same statement where it can.
        let reconnect = reconnect_after(&record, side, now);
        let presence = self
            .store
            .report_presence(
                game_id,
                side,
                &request.gateway_id,
                request.connected,
                now,
                now + lease,
                reconnect.as_ref().map(|arm| arm as &ArmAfterReport<'_>),
            )
            .await
            .map_err(|e| store_error_status(&e))?;
        let connected = presence.connected();
        Ok(pb::ReportPresenceResponse {
            south_connected: connected[0],
            north_connected: connected[1],
        })
    }
}

/// What arms `side`'s time to come back after a presence report heard at `reported_at`, from
/// how long the side counts as connected after it: counted from the report, due no earlier
/// than the side's connected leases end (see [`timers::reconnect_after_report`]). `None` once
/// the game has ended: nobody's time runs then.
fn reconnect_after(
    record: &GameRecord,
    side: Side,
    reported_at: SystemTime,
) -> Option<impl Fn(Option<SystemTime>) -> Timer + Send + Sync + use<>> {
    if record.game.phase() == Phase::Ended {
        return None;
    }
    let game_id = record.meta.game_id;
    let time_control = record.meta.time_control.clone();
    let version = record.version;
    Some(move |connected_until| {
        timers::reconnect_after_report(
            game_id,
            &time_control,
            side,
            version,
            reported_at,
            connected_until,
        )
    })
}
