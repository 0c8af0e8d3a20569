//! The computer seat's driver: plays one game for a [`ComputerPlayer`] through the session's
//! internal API, holding a lease so that one process drives a game at a time.
//!
//! The bot sees only projections: every full-information event from `WatchGame` goes through
//! the engine's `project` for the bot's seat before the bot observes it. It deploys once
//! (`SetDeployment` + `ConfirmDeployment`, fixed idempotency keys) and, when the game is at the
//! version it has observed and it is its turn, picks from `ListLegalMoves` and submits with the
//! key `bot:<version>` and that expected version: a duplicate driver's move is a replay or an
//! `ABORTED`, never a second move. While it holds the game it reports the computer's seat as
//! connected (`ReportPresence`, leased like a gateway's report), so the online rules' reconnect
//! deadline never ends a game because the computer "stayed away".

use crate::service::{SessionClient, now_ms};
use crate::store::{ComputerGame, MatchStore};
use hidden_front_bot::ComputerPlayer;
use hidden_front_proto::v1 as pb;
use hidden_front_rules::{Event, Rules, Viewer, project};
use hidden_front_wire as wire;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tonic::Code;

/// Counters of what this process's driver did, for tests and logs.
#[derive(Debug, Default)]
pub struct DriverStats {
    /// Moves the session accepted.
    pub moves_played: AtomicU64,
    /// Moves the session refused as illegal (`INVALID_ARGUMENT`): should stay zero.
    pub moves_refused: AtomicU64,
    /// Games driven to their end.
    pub games_finished: AtomicU64,
}

/// Drives `game` until it ends, the lease is lost or `shutdown` is cancelled (the lease is then
/// given up at once, so another process takes the game over without waiting for it to lapse).
pub async fn drive(
    store: Arc<dyn MatchStore>,
    session: SessionClient,
    game: ComputerGame,
    owner: String,
    lease: Duration,
    stats: Arc<DriverStats>,
    shutdown: CancellationToken,
) {
    let game_id = game.game_id;
    let mut presence = session.clone();
    let renew = async {
        loop {
            report_presence(&mut presence, &game, &owner, lease).await;
            tokio::time::sleep(lease / 3).await;
            match store
                .renew_computer_lease(game_id, &owner, now_ms() + lease.as_millis() as u64)
                .await
            {
                Ok(true) => {}
                Ok(false) => return "the lease was lost".to_owned(),
                Err(error) => return format!("renewing the lease failed: {error}"),
            }
        }
    };
    tokio::select! {
        outcome = play(session, &game, &stats) => match outcome {
            Ok(()) => {
                stats.games_finished.fetch_add(1, Ordering::Relaxed);
                if let Err(error) = store.finish_computer_game(game_id).await {
                    tracing::warn!(%game_id, %error, "could not mark a computer game finished");
                }
            }
            Err(status) => tracing::warn!(%game_id, %status, "driving a computer game stopped; another attempt follows the lease"),
        },
        why = renew => tracing::info!(%game_id, why, "stopped driving a computer game"),
        () = shutdown.cancelled() => {
            if let Err(error) = store.renew_computer_lease(game_id, &owner, now_ms()).await {
                tracing::warn!(%game_id, %error, "could not give up a computer game's lease");
            }
        }
    }
}

/// Tells the session that the computer's seat is connected, for as long as this driver holds the
/// game: the seat is played from here, not through a gateway, and the online rules end a game
/// whose player stays away (the reconnect deadline). The report is leased like a gateway's, so a
/// driver that dies stops vouching for the seat when its lease runs out, and the next driver
/// reports again. A failed report is logged and retried with the next renewal.
async fn report_presence(
    session: &mut SessionClient,
    game: &ComputerGame,
    owner: &str,
    lease: Duration,
) {
    let reported = session
        .report_presence(pb::ReportPresenceRequest {
            game_id: game.game_id.to_string(),
            side: wire::side_to_proto(game.side) as i32,
            connected: true,
            gateway_id: owner.to_owned(),
            lease_seconds: u32::try_from(lease.as_secs().clamp(1, 3600)).unwrap_or(3600),
        })
        .await;
    if let Err(status) = reported {
        tracing::warn!(game_id = %game.game_id, %status, "could not report the computer seat as connected");
    }
}

/// Plays the game to its end.
async fn play(
    mut session: SessionClient,
    game: &ComputerGame,
    stats: &DriverStats,
) -> Result<(), tonic::Status> {
    let rules = Rules::parse(&game.rules).map_err(|e| {
        hidden_front_api_error::internal(format!("stored rules {:?}: {e}", game.rules))
    })?;
    let side = game.side;
    let game_id = game.game_id.to_string();
    let mut bot = ComputerPlayer::with_level(side, rules, game.level, game.seed);
    let mut stream = session
        .watch_game(pb::WatchGameRequest {
            game_id: game_id.clone(),
            from_seq: 1,
            with_status: false,
        })
        .await?
        .into_inner();
    let context = |key: String, expected_version: Option<u64>| pb::CommandContext {
        game_id: game_id.clone(),
        side: wire::side_to_proto(side) as i32,
        idempotency_key: key,
        expected_version,
    };
    let mut deployed = false;
    while let Some(item) = stream.message().await? {
        let upstream = item.event.as_ref().ok_or_else(|| {
            hidden_front_api_error::internal("the session sent a watch item without its event")
        })?;
        let event = wire::engine_event_from_proto(&rules, upstream).map_err(|e| {
            hidden_front_api_error::internal(format!("event {} does not decode: {e}", upstream.seq))
        })?;
        let last_seq = upstream.seq;
        // The bot only ever receives its seat's projection.
        if let Some(seen) = project(&event, Viewer::player(side), None) {
            bot.observe(&seen);
        }
        if matches!(event, Event::Ended { .. }) {
            return Ok(());
        }
        if !deployed {
            deployed = true;
            let deployment = wire::deployment_to_proto(&rules, &bot.deployment());
            let set = session
                .set_deployment(pb::SetDeploymentRequest {
                    context: Some(context("bot:deploy".into(), None)),
                    deployment: Some(deployment),
                })
                .await;
            if let Err(status) = set
                && status.code() != Code::FailedPrecondition
            {
                return Err(status);
            }
            let confirm = session
                .confirm_deployment(pb::ConfirmDeploymentRequest {
                    context: Some(context("bot:confirm".into(), None)),
                })
                .await;
            if let Err(status) = confirm
                && status.code() != Code::FailedPrecondition
            {
                return Err(status);
            }
        }
        let legal = session
            .list_legal_moves(pb::ListLegalMovesRequest {
                game_id: game_id.clone(),
                side: wire::side_to_proto(side) as i32,
                min_version: Some(last_seq),
            })
            .await?
            .into_inner();
        // Only on its turn, and only when it has observed everything up to that version.
        if legal.moves.is_empty() || legal.version != last_seq {
            continue;
        }
        let moves = legal
            .moves
            .iter()
            .map(|m| wire::move_from_proto(&rules, Some(m)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| hidden_front_api_error::internal(format!("legal move list: {e}")))?;
        // A search level thinks for up to its budget: off the async workers, so the other
        // games this process drives (and its RPCs) do not wait on it.
        let (thinker, chosen) = tokio::task::spawn_blocking(move || {
            let chosen = bot.choose_move(&moves);
            (bot, chosen)
        })
        .await
        .map_err(|e| hidden_front_api_error::internal(format!("the computer's move: {e}")))?;
        bot = thinker;
        let submitted = session
            .submit_move(pb::SubmitMoveRequest {
                context: Some(context(
                    format!("bot:{}", legal.version),
                    Some(legal.version),
                )),
                r#move: Some(wire::move_to_proto(&rules, chosen)),
            })
            .await;
        match submitted {
            Ok(_) => {
                stats.moves_played.fetch_add(1, Ordering::Relaxed);
            }
            Err(status) if status.code() == Code::InvalidArgument => {
                stats.moves_refused.fetch_add(1, Ordering::Relaxed);
                tracing::error!(game_id, %status, "the session refused the computer's move");
            }
            // The game moved on meanwhile (another driver, a timer): the next event tells.
            Err(status) if matches!(status.code(), Code::Aborted | Code::FailedPrecondition) => {}
            Err(status) => return Err(status),
        }
    }
    Ok(())
}
