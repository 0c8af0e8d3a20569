//! [`SessionTarget`]: fires timers at the session's `ApplyTimer`.

use crate::runner::{FireOutcome, TimerTarget};
use async_trait::async_trait;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_store::{Timer, TimerKind};
use hidden_front_telemetry::TracedChannel;
use std::time::{Duration, SystemTime};
use tonic::Code;

/// How long one `ApplyTimer` call may take before it counts as failed (and is retried).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The session, over gRPC (with trace context), as the clock's target.
#[derive(Clone)]
pub struct SessionTarget {
    client: SessionServiceClient<TracedChannel>,
    retry_delay: Duration,
}

impl SessionTarget {
    /// Fires at the session behind `client`; an unreachable session is retried after
    /// `retry_delay`.
    pub fn new(
        client: SessionServiceClient<TracedChannel>,
        retry_delay: Duration,
    ) -> SessionTarget {
        SessionTarget {
            client,
            retry_delay,
        }
    }
}

/// The wire form of a timer's fire.
pub fn apply_timer_request(timer: &Timer) -> pb::ApplyTimerRequest {
    pb::ApplyTimerRequest {
        game_id: timer.game_id.to_string(),
        kind: match timer.kind {
            TimerKind::Deployment => pb::TimerKind::Deployment,
            TimerKind::Move => pb::TimerKind::Move,
            TimerKind::Reconnect => pb::TimerKind::Reconnect,
        } as i32,
        armed_version: timer.armed_version,
        side: hidden_front_wire::side_to_proto(timer.side) as i32,
        deadline_unix_millis: timer.fire_at_unix_millis(),
    }
}

#[async_trait]
impl TimerTarget for SessionTarget {
    #[tracing::instrument(name = "clock.fire", skip_all, fields(game_id = %timer.game_id, kind = timer.kind.name(), armed_version = timer.armed_version))]
    async fn fire(&self, timer: &Timer) -> FireOutcome {
        let mut request = tonic::Request::new(apply_timer_request(timer));
        request.set_timeout(CALL_TIMEOUT);
        match self.client.clone().apply_timer(request).await {
            Ok(response) if response.get_ref().applied => FireOutcome::Applied,
            Ok(_) => FireOutcome::Stale,
            Err(status) => match status.code() {
                // The session's clock says it is not due yet (clock skew): a moment later.
                Code::FailedPrecondition => FireOutcome::Retry {
                    at: SystemTime::now() + Duration::from_millis(100),
                    reason: status.message().to_string(),
                },
                // The game is gone, or the timer cannot be stated: firing again cannot help.
                Code::NotFound | Code::InvalidArgument => FireOutcome::Drop {
                    reason: format!("{:?}: {}", status.code(), status.message()),
                },
                _ => FireOutcome::Retry {
                    at: SystemTime::now() + self.retry_delay,
                    reason: format!("{:?}: {}", status.code(), status.message()),
                },
            },
        }
    }
}
