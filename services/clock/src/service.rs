//! The `ClockService` gRPC API: read-only views of the timers and of this clock process.

use crate::runner::ClockStats;
use hidden_front_api_error::{ApiError, Reason};
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::clock_service_server::ClockService as ClockApi;
use hidden_front_store::{StoreError, TimerStore};
use hidden_front_wire as wire;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tonic::{Request, Response, Status};

/// Answers `ListTimers` and `GetClockStatus` from the timer store.
pub struct ClockService {
    store: Arc<dyn TimerStore>,
    owner: String,
    stats: Arc<ClockStats>,
}

impl ClockService {
    /// The API over `store`, reporting the counters of the clock named `owner`.
    pub fn new(store: Arc<dyn TimerStore>, owner: String, stats: Arc<ClockStats>) -> ClockService {
        ClockService {
            store,
            owner,
            stats,
        }
    }
}

fn store_status(error: &StoreError) -> Status {
    match error {
        StoreError::NotFound(id) => {
            ApiError::new(Reason::GameNotFound, format!("game {id} not found")).into()
        }
        other => {
            tracing::error!(error = %other, "timer store failed");
            ApiError::new(
                Reason::StoreUnavailable,
                "the timer store is unavailable; retry",
            )
            .into()
        }
    }
}

#[tonic::async_trait]
impl ClockApi for ClockService {
    async fn list_timers(
        &self,
        request: Request<pb::ListTimersRequest>,
    ) -> Result<Response<pb::ListTimersResponse>, Status> {
        let game_id = wire::game_id_from_proto("game_id", &request.into_inner().game_id)
            .map_err(|e| Status::from(ApiError::from(e)))?;
        let timers = self
            .store
            .timers_of(game_id)
            .await
            .map_err(|e| store_status(&e))?;
        Ok(Response::new(pb::ListTimersResponse {
            timers: timers
                .iter()
                .map(|timer| {
                    let request = crate::target::apply_timer_request(timer);
                    pb::ArmedTimer {
                        kind: request.kind,
                        side: request.side,
                        armed_version: request.armed_version,
                        deadline_unix_millis: request.deadline_unix_millis,
                    }
                })
                .collect(),
        }))
    }

    async fn get_clock_status(
        &self,
        _request: Request<pb::GetClockStatusRequest>,
    ) -> Result<Response<pb::GetClockStatusResponse>, Status> {
        let armed = self
            .store
            .armed_timer_count()
            .await
            .map_err(|e| store_status(&e))?;
        Ok(Response::new(pb::GetClockStatusResponse {
            armed,
            owner: self.owner.clone(),
            fired_applied: self.stats.applied.load(Ordering::Relaxed),
            fired_stale: self.stats.stale.load(Ordering::Relaxed),
            retried: self.stats.retried.load(Ordering::Relaxed),
        }))
    }
}
