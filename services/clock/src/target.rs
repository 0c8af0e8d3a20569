//! [`SessionTarget`]: fires timers at the session's `ApplyTimer`.

use crate::runner::{FireOutcome, TimerTarget};
use async_trait::async_trait;
use futures_util::StreamExt as _;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::session_service_client::SessionServiceClient;
use hidden_front_store::{Timer, TimerKind};
use hidden_front_telemetry::TracedChannel;
use std::time::{Duration, SystemTime};
use tonic::Code;

/// How long one `ApplyTimer` call may take before it counts as failed (and is retried).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// When the same fire is sent again beside a call still unanswered: an `ApplyTimer` answers in
/// milliseconds, so a call unanswered after these has most likely gone to a session host that
/// vanished without a FIN (a lost node, a cut link), which the balanced channel drops within
/// about two health probes (2 s). Waiting for the call's own timeout and a retry made such a fire
/// 6-7 s late (past the clock's documented bound under load); the copies go where the balancer
/// sends them then, the first answer wins, and a fire is idempotent (the session applies a timer
/// only at the version that armed it, so a second copy answers `applied: false`).
const HEDGE_AFTER: [Duration; 2] = [Duration::from_millis(1_000), Duration::from_millis(3_000)];

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

/// The first answer of `call`, made once at once and again after each of `hedges` (from the
/// start) while none has answered.
async fn first_answer<F, Fut>(call: F, hedges: &[Duration]) -> Fut::Output
where
    F: Fn() -> Fut,
    Fut: std::future::Future,
{
    let mut calls = futures_util::stream::FuturesUnordered::new();
    calls.push(call());
    let started = tokio::time::Instant::now();
    let mut hedges = hedges.iter();
    loop {
        let next_hedge = hedges.next();
        let hedge = async {
            match next_hedge {
                Some(after) => tokio::time::sleep_until(started + *after).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // Never empty here: a call is pushed before the loop and none leaves but this one.
            Some(answer) = calls.next() => return answer,
            () = hedge => calls.push(call()),
        }
    }
}

#[async_trait]
impl TimerTarget for SessionTarget {
    #[tracing::instrument(name = "clock.fire", skip_all, fields(game_id = %timer.game_id, kind = timer.kind.name(), armed_version = timer.armed_version))]
    async fn fire(&self, timer: &Timer) -> FireOutcome {
        let call = || {
            let mut request = tonic::Request::new(apply_timer_request(timer));
            request.set_timeout(CALL_TIMEOUT);
            let mut client = self.client.clone();
            async move { client.apply_timer(request).await }
        };
        let answer = first_answer(call, &HEDGE_AFTER).await;
        match answer {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Calls that answer `answers[n]` (the n-th call's answer, after that delay; `None` never).
    async fn run(answers: &[Option<u64>]) -> (u64, usize, Duration) {
        let made = AtomicUsize::new(0);
        let started = tokio::time::Instant::now();
        let answer = first_answer(
            || {
                let n = made.fetch_add(1, Ordering::SeqCst);
                let delay = answers.get(n).copied().flatten();
                async move {
                    match delay {
                        Some(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            n as u64
                        }
                        None => std::future::pending().await,
                    }
                }
            },
            &HEDGE_AFTER,
        )
        .await;
        (answer, made.load(Ordering::SeqCst), started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_fire_that_answers_in_time_is_sent_once() {
        let (answer, made, took) = run(&[Some(20)]).await;
        assert_eq!((answer, made), (0, 1));
        assert_eq!(took, Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_fire_into_a_vanished_host_is_sent_again_and_the_first_answer_wins() {
        // The first call hangs (a host gone without a FIN); the copy after 1 s answers.
        let (answer, made, took) = run(&[None, Some(30)]).await;
        assert_eq!((answer, made), (1, 2));
        assert_eq!(took, Duration::from_millis(1_030));
        // Both first copies hang; the third, at 3 s, answers.
        let (answer, made, took) = run(&[None, None, Some(10)]).await;
        assert_eq!((answer, made), (2, 3));
        assert_eq!(took, Duration::from_millis(3_010));
        // The first call answers after its copy was sent, before the copy does: it wins.
        let (answer, made, _) = run(&[Some(1_200), Some(5_000)]).await;
        assert_eq!((answer, made), (0, 2));
    }
}
