//! gRPC health that follows the dependencies: the session service is SERVING only while its
//! store answers, the gateway only while its session does (the store, when the session runs in
//! this process; otherwise the session's own health, as the gateway's balanced session channel
//! asks it of every address (`hidden_front_channel::Serving`): ready while any of them answers
//! SERVING, as the gateway's calls go to those. One address only, the first, took every gateway
//! out of rotation when that one session host was lost while another served:
//! docs/cluster-test.md). The overall `""` service is SERVING only when every service of this
//! process is.
//!
//! Each gRPC port has its own health service, which knows only the services that port serves:
//! asking the public port about `SessionService` answers NOT_FOUND, as it would on a process
//! without it, instead of a status for a service that is not there.
//!
//! The same decision feeds the gateway's HTTP readiness probe (`GET /readyz`, through a
//! [`Readiness`] watch): ready exactly when the overall status is SERVING. When a shutdown
//! starts, [`Readiness::Draining`] is set and every status of every port turns NOT_SERVING for
//! good, so gRPC and HTTP probes alike take the process out of rotation while it drains.

use hidden_front_channel::Serving;
use hidden_front_gateway::http::Readiness;
use hidden_front_proto::v1::admin_service_server::SERVICE_NAME as ADMIN_SERVICE;
use hidden_front_proto::v1::clock_service_server::SERVICE_NAME as CLOCK_SERVICE;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
use hidden_front_proto::v1::organiser_service_server::SERVICE_NAME as ORGANISER_SERVICE;
use hidden_front_proto::v1::player_service_server::SERVICE_NAME as PLAYER_SERVICE;
use hidden_front_proto::v1::session_service_server::SERVICE_NAME as SESSION_SERVICE;
use hidden_front_store::GameStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// How often the dependencies are checked (a gateway without the session in its process: at
/// each probe round of its session channel instead, `hidden_front_channel::PROBE_EVERY`).
pub const CHECK_INTERVAL: Duration = Duration::from_secs(3);
/// How long one check may take before it counts as a failure.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// What this process runs and what that depends on.
pub struct Dependencies {
    /// The store, when the session, the clock or matchmaking runs in this process (their health
    /// follows it).
    pub store: Option<Arc<dyn GameStore>>,
    /// Whether the session of this process finds its store lost (its last pulse failed), when
    /// the session runs here: the store counts as down at once while it is, without waiting for
    /// the checks to fail twice, and every change is checked at once. A session host cut from
    /// its database must leave its callers' rotation within about a pulse, not two checks.
    pub store_lost: Option<watch::Receiver<bool>>,
    /// How many of the session's addresses serve, by the gateway's session channel, when the
    /// gateway runs in this process. Not used when the session runs here too (then the store
    /// decides).
    pub session_serving: Option<Serving>,
}

/// The health service of one gRPC port: its reporter and the names of the services that port
/// serves, the only ones it reports on (besides the overall `""`).
pub struct PortHealth {
    /// The reporter behind that port's health service.
    pub reporter: HealthReporter,
    /// Full names of the services of that port (`hiddenfront.v1.PlayerService`, ...).
    pub services: Vec<&'static str>,
}

/// Checks the dependencies once (so the first health answer is already true), sets the
/// statuses on every port and `readiness`, then keeps checking every [`CHECK_INTERVAL`] in a
/// background task, whose handle stops it. Once `readiness` is set to [`Readiness::Draining`]
/// (by whoever stops the process), every status turns NOT_SERVING and checking stops.
pub async fn start(
    ports: Vec<PortHealth>,
    deps: Dependencies,
    readiness: Arc<watch::Sender<Readiness>>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut draining = readiness.subscribe();
    let mut checker = Checker {
        ports,
        deps,
        store: Verdicts::default(),
        session: Verdicts::default(),
        last: None,
        readiness,
    };
    checker.check().await;
    let mut store_lost = checker.deps.store_lost.clone();
    // A gateway without the session in its process is checked at each probe of its session
    // channel (every second) rather than every CHECK_INTERVAL: its only dependency is what those
    // probes find, and two failed checks 3 s apart held a gateway cut from every session host in
    // the ingress's rotation for up to 6 s more (the cluster test's
    // `partition_gateway1_sessions`, 8.3–9.9 s unable to move against a 10 s bound). Still two
    // failed rounds in a row, as for the store, so one slow probe takes no gateway out.
    let mut probes = match (&checker.deps.store, &checker.deps.session_serving) {
        (None, Some(serving)) => Some(serving.clone()),
        _ => None,
    };
    let mut probe_driven = probes.is_some();
    Ok(tokio::spawn(async move {
        let mut every = tokio::time::interval(CHECK_INTERVAL);
        every.tick().await;
        loop {
            tokio::select! {
                _ = every.tick(), if !probe_driven => checker.check().await,
                probed = next_probe(&mut probes), if probe_driven => match probed {
                    true => checker.check().await,
                    // The channel's prober is gone: back to checking on the interval.
                    false => probe_driven = false,
                },
                Some(Ok(())) = async { match &mut store_lost {
                    Some(lost) => Some(lost.changed().await),
                    None => None,
                } } => checker.check().await,
                // Draining, or nobody left to say so: nothing more to serve either way.
                _ = async { draining.wait_for(|r| *r == Readiness::Draining).await.is_ok() } => {
                    checker.drain().await;
                    return;
                }
            }
        }
    }))
}

struct Checker {
    ports: Vec<PortHealth>,
    deps: Dependencies,
    /// What each dependency (store, session) answered lately.
    store: Verdicts,
    session: Verdicts,
    /// The statuses set last time (session, gateway), to log only changes.
    last: Option<(Option<bool>, Option<bool>)>,
    /// What the HTTP readiness probe answers; [`Readiness::Draining`] is final.
    readiness: Arc<watch::Sender<Readiness>>,
}

impl Checker {
    async fn check(&mut self) {
        if *self.readiness.borrow() == Readiness::Draining {
            return;
        }
        let lost = self
            .deps
            .store_lost
            .as_ref()
            .is_some_and(|lost| *lost.borrow());
        let store_ok = match &self.deps.store {
            Some(_) if lost => {
                self.store.add(false);
                Some(false)
            }
            Some(store) => {
                let ping = async {
                    matches!(
                        tokio::time::timeout(CHECK_TIMEOUT, store.ping()).await,
                        Ok(Ok(()))
                    )
                };
                match ping_unless_lost(ping, self.deps.store_lost.clone()).await {
                    Some(answered) => Some(self.store.add(answered)),
                    None => {
                        self.store.add(false);
                        Some(false)
                    }
                }
            }
            None => None,
        };
        let gateway_ok = match (&mut self.deps.session_serving, store_ok) {
            (None, _) => None,
            (Some(_), Some(store_ok)) => Some(store_ok),
            (Some(serving), None) => Some(self.session.add(any_serving(serving).await)),
        };
        let status = |ok: bool| {
            if ok {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            }
        };
        let all_ok = store_ok.unwrap_or(true) && gateway_ok.unwrap_or(true);
        for port in &self.ports {
            for &service in &port.services {
                let ok = match service {
                    PLAYER_SERVICE => gateway_ok,
                    SESSION_SERVICE | ADMIN_SERVICE | CLOCK_SERVICE | MATCHMAKING_SERVICE
                    | ORGANISER_SERVICE => store_ok,
                    _ => None,
                };
                if let Some(ok) = ok {
                    port.reporter.set_service_status(service, status(ok)).await;
                }
            }
            port.reporter.set_service_status("", status(all_ok)).await;
        }
        let ready = match all_ok {
            true => Readiness::Serving,
            false => Readiness::NotServing,
        };
        self.readiness.send_if_modified(|current| {
            let changed = *current != Readiness::Draining && *current != ready;
            if changed {
                *current = ready;
            }
            changed
        });
        let now = (store_ok, gateway_ok);
        if self.last != Some(now) {
            if all_ok {
                tracing::info!(store = ?store_ok, session = ?gateway_ok, "health: SERVING");
            } else {
                tracing::warn!(store = ?store_ok, session = ?gateway_ok, "health: NOT_SERVING (a dependency does not answer)");
            }
            self.last = Some(now);
        }
    }

    /// A shutdown started: every service of every port, and the overall `""`, NOT_SERVING.
    async fn drain(&mut self) {
        for port in &self.ports {
            for &service in &port.services {
                port.reporter
                    .set_service_status(service, ServingStatus::NotServing)
                    .await;
            }
            port.reporter
                .set_service_status("", ServingStatus::NotServing)
                .await;
        }
        tracing::info!("health: NOT_SERVING (draining for shutdown)");
    }
}

/// How many checks in a row a dependency that has answered before must fail before this
/// process reports it down.
pub const FAILURES_TO_DOWN: u32 = 2;

/// One dependency's recent answers. Why not the last answer alone: under load one store ping
/// can take longer than [`CHECK_TIMEOUT`] (the cluster test saw a session's pool slow for a
/// moment while half the games moved to it from a lost host), and every gateway reading that
/// one NOT_SERVING left the load balancer's rotation at the same time: a whole-service outage
/// made of one slow answer. A dependency that never answered is down from the first check.
#[derive(Debug, Default)]
struct Verdicts {
    answered_once: bool,
    failures_in_a_row: u32,
}

impl Verdicts {
    /// Counts one check's answer; whether the dependency counts as up now.
    fn add(&mut self, ok: bool) -> bool {
        if ok {
            self.answered_once = true;
            self.failures_in_a_row = 0;
            return true;
        }
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        self.answered_once && self.failures_in_a_row < FAILURES_TO_DOWN
    }
}

/// Whether the session channel's prober reported another round (false: it is gone).
async fn next_probe(probes: &mut Option<Serving>) -> bool {
    match probes {
        Some(serving) => serving.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// `ping`'s answer, or `None` as soon as `lost` says the store is lost while it waits. Why: a
/// check whose ping waits out [`CHECK_TIMEOUT`] on a store that stopped answering held the
/// report of the loss (the check that the loss wakes runs after it) for up to that long; the
/// cluster test saw 1.4 s between the lost pulse and NOT_SERVING.
async fn ping_unless_lost(
    ping: impl std::future::Future<Output = bool>,
    lost: Option<watch::Receiver<bool>>,
) -> Option<bool> {
    let Some(mut lost) = lost else {
        return Some(ping.await);
    };
    tokio::select! {
        answered = ping => Some(answered),
        Ok(_) = lost.wait_for(|lost| *lost) => None,
    }
}

/// Whether any of the session's addresses answered SERVING at the channel's last probe; before
/// its first probe has answered, waits for it up to [`CHECK_TIMEOUT`].
async fn any_serving(serving: &mut Serving) -> bool {
    let _ = tokio::time::timeout(CHECK_TIMEOUT, serving.wait_for(Option::is_some)).await;
    matches!(*serving.borrow(), Some(n) if n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Down from the first failed check when it never answered; after one that did, only from
    /// the [`FAILURES_TO_DOWN`]th failure in a row.
    #[test]
    fn one_slow_answer_does_not_take_a_dependency_down() {
        let mut never = Verdicts::default();
        assert!(!never.add(false), "never answered");
        let mut store = Verdicts::default();
        assert!(store.add(true));
        assert!(store.add(false), "one failure after an answer");
        assert!(!store.add(false), "two in a row");
        assert!(store.add(true), "back");
        assert!(store.add(false));
    }

    /// A ping that does not answer is cut short the moment the store is found lost; one that
    /// answers is taken as it is, lost or not later; without a lost flag the ping decides.
    #[tokio::test]
    async fn a_store_found_lost_ends_a_waiting_check_at_once() {
        let (tx, lost) = watch::channel(false);
        let waiting = tokio::spawn(ping_unless_lost(std::future::pending(), Some(lost.clone())));
        tx.send_replace(true);
        let ended = tokio::time::timeout(Duration::from_secs(30), waiting)
            .await
            .expect("the check ended when the store was lost, not with its ping");
        assert_eq!(ended.unwrap(), None, "lost");
        tx.send_replace(false);
        assert_eq!(
            ping_unless_lost(std::future::ready(true), Some(lost)).await,
            Some(true)
        );
        assert_eq!(
            ping_unless_lost(std::future::ready(false), None).await,
            Some(false)
        );
    }

    /// A gateway follows its session channel's probe rounds, not the 3 s check interval: ready
    /// after the first round that finds a session serving, not ready after the second round in
    /// a row that finds none (one is not enough), all without waiting for the interval.
    #[tokio::test(start_paused = true)]
    async fn a_gateway_is_checked_at_every_probe_round() {
        let (probe, serving) = watch::channel(Some(1));
        let (reporter, _service) = tonic_health::server::health_reporter();
        let readiness = Arc::new(watch::channel(Readiness::NotServing).0);
        let mut ready = readiness.subscribe();
        let checks = start(
            vec![PortHealth {
                reporter,
                services: vec![PLAYER_SERVICE],
            }],
            Dependencies {
                store: None,
                store_lost: None,
                session_serving: Some(serving),
            },
            Arc::clone(&readiness),
        )
        .await
        .unwrap();
        assert_eq!(*ready.borrow_and_update(), Readiness::Serving);
        probe.send_replace(Some(0));
        // Paused time moves only once every task is idle: the checker has taken the round.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let at = tokio::time::Instant::now();
        assert_eq!(
            *ready.borrow(),
            Readiness::Serving,
            "one round without a session is not enough"
        );
        probe.send_replace(Some(0));
        ready
            .wait_for(|r| *r == Readiness::NotServing)
            .await
            .unwrap();
        assert_eq!(
            at.elapsed(),
            Duration::ZERO,
            "down at the second round, not at a check interval"
        );
        probe.send_replace(Some(1));
        ready.wait_for(|r| *r == Readiness::Serving).await.unwrap();
        assert_eq!(at.elapsed(), Duration::ZERO, "back at the next round");
        checks.abort();
    }

    /// Ready while any address serves; not without a probe's answer, nor when none serves.
    #[tokio::test]
    async fn the_gateway_is_ready_while_any_session_address_serves() {
        let (prober, mut never) = watch::channel(None);
        drop(prober);
        assert!(!any_serving(&mut never).await, "never probed");
        let (tx, mut serving) = watch::channel(None);
        tx.send_replace(Some(0));
        assert!(!any_serving(&mut serving).await, "none serves");
        tx.send_replace(Some(1));
        assert!(any_serving(&mut serving).await, "one of two serves");
    }
}
