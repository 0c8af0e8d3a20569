//! `hidden-front play`: a plain-text terminal client, so a person can play a real game through the
//! gateway's public `PlayerService`, e.g. one tmux pane per player.
//!
//! The client holds one `PlayerService/Connect` stream per session ([`connection`]): every
//! command goes up it as a request and its answer comes back on it, and the games and the lobby
//! the client follows come down the same stream. So a move is one message up, and a gateway that
//! restarts is found again once, by one reconnection, for everything.
//!
//! The client holds no game logic of its own. The board it draws is the gateway's `GetGame` view
//! when the game opens (and again after the connection came back, or on `board`), followed from
//! there by the follow's events with the rules engine's `GameView::apply` (the same function the
//! engine's tests hold to `view` after every event), and by its status items for presence and
//! clocks; so it reads the view once, not per event ([`game`]). An event that does not follow
//! from the view on screen (which the referee never sends) makes the next redraw fetch the view
//! again. The events also say *what happened* (the last move and its fight, which a view does not
//! carry). Typed commands and followed events are read concurrently and handled one at a time on
//! one task, so output never interleaves mid-board.
//!
//! Output is plain lines on stdout (no full-screen UI), so it works in tmux, in a pipe and in
//! tests. End of input (Ctrl-D, or the end of a piped script) leaves like `quit`.
//!
//! Without `--game` the client opens in the lobby ([`lobby`]): play the computer, find a match,
//! create or accept an invite, spectate, list games and the rating; then it enters the game, and
//! comes back to the lobby when the game ends. `--guest` signs in with a guest token from the
//! gateway's HTTP port ([`guest`]), so nobody needs the internal port or a signing secret.

pub mod board;
pub mod clock;
pub mod commands;
pub mod connection;
mod game;
pub mod guest;
pub mod legend;
pub mod lobby;
pub mod reconnect;

pub use game::{Left, play_game};

use anyhow::bail;
use board::printable;
use connection::Connection;
use hidden_front_proto::v1 as pb;
use std::io::{BufRead as _, Write as _};
use tokio::sync::mpsc;
use tonic::{Code, Status};

/// Arguments of `hidden-front play`.
#[derive(Debug, clap::Args)]
pub struct PlayArgs {
    /// The game to play (its id or its link). Without it (and without --watch), the lobby.
    #[arg(long, conflicts_with = "watch")]
    pub game: Option<String>,
    /// Spectate this game (its id or its link) instead of playing.
    #[arg(long)]
    pub watch: Option<String>,
    /// The gateway's gRPC address (the port `hidden-front serve` listens on).
    #[arg(long, env = "HF_GATEWAY", default_value = "http://127.0.0.1:50051")]
    pub gateway: String,
    /// Your bearer token, from the platform or `hidden-front token --player NAME`.
    #[arg(long, env = "HF_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Sign in as a guest: ask the gateway's HTTP port (--http) for a guest token, where the
    /// gateway hands them out (the one-box default). Wins over --token / HF_TOKEN.
    #[arg(long)]
    pub guest: bool,
    /// The gateway's HTTP address (the page and `POST /v1/guest`), for --guest.
    #[arg(long, env = "HF_HTTP", default_value = "http://127.0.0.1:8080")]
    pub http: String,
}

/// Runs the client: the game given, or the lobby; until the player quits or input ends (or, with
/// `--game` / `--watch`, until that game ends).
pub async fn run(args: PlayArgs) -> anyhow::Result<()> {
    let token = match (&args.token, args.guest) {
        (_, true) => {
            let guest = guest::guest_token(&args.http).await?;
            say(&format!(
                "signed in as guest {} (the token is good for {} min)",
                printable(&guest.player),
                guest
                    .expires_at_unix_millis
                    .saturating_sub(clock::now_unix_millis())
                    / 60_000
            ))?;
            guest.token
        }
        (Some(token), false) if !token.trim().is_empty() => token.trim().to_string(),
        _ => bail!(
            "no token: pass --token or set HF_TOKEN (get one with `hidden-front token --player NAME`), or play as a guest with --guest"
        ),
    };
    let connection = Connection::open(&args.gateway, &token).await?;
    check_gateway(&connection, &args.gateway).await?;
    if let Some(offset) = guest::server_clock_offset(&args.http).await {
        clock::set_server_offset(offset);
        if offset.abs() >= 2_000 {
            say(&format!(
                "this machine's clock is {:.1} s {} the server's; the countdowns use the server's",
                offset.unsigned_abs() as f64 / 1000.0,
                if offset > 0 { "behind" } else { "ahead of" }
            ))?;
        }
    }
    let mut lines = stdin_lines();
    let (game_id, spectate) = match (&args.game, &args.watch) {
        (Some(game), _) => (commands::game_of_link(game), false),
        (None, Some(game)) => (commands::game_of_link(game), true),
        (None, None) => return lobby::run(connection, &mut lines).await,
    };
    play_game(connection, game_id, spectate, &mut lines, false)
        .await
        .map(|_| ())
}

/// What to say when `--gateway` answers plain HTTP: the gateway's HTTP port (the page, guest
/// sign-in) was given where its gRPC port belongs, a mistake tonic itself reports only as a
/// protocol error ("invalid compression flag") that names neither port.
pub(crate) fn http_not_grpc(gateway: &str, error: &dyn std::fmt::Display) -> String {
    format!(
        "{gateway} answers HTTP, not gRPC: it looks like the gateway's HTTP port (the page); \
         use the gRPC port with --gateway / HF_GATEWAY, e.g. http://127.0.0.1:50051 (the \
         one-box default; the HTTP port goes to --http) [{error}]"
    )
}

/// Whether a refusal looks like no gRPC server answered at all (an answer without a
/// `grpc-status`, undecodable frames, a broken HTTP/2 exchange) rather than a gateway's verdict.
fn not_grpc_answer(status: &Status) -> bool {
    let message = status.message();
    message.contains("protocol error")
        || message.contains("grpc-status header missing")
        || message.contains("invalid compression flag")
        || matches!(status.code(), Code::Unknown | Code::Internal)
}

/// The one cheap request at start (`ListMyGames`, active games only), which opens the `Connect`
/// stream and so proves that the address speaks the player API and accepts the token: a wrong
/// port or a bad token is told now, in words, instead of at the first command, after the lobby
/// or the board has opened. Every failure ends the client with a message naming what is wrong
/// and what to pass instead.
async fn check_gateway(connection: &Connection, gateway: &str) -> anyhow::Result<()> {
    let request = connection::Request::ListMyGames(pb::ListMyGamesRequest { active_only: true });
    let answer = connection.ask::<pb::ListMyGamesResponse>(request).await;
    let Err(status) = answer else {
        return Ok(());
    };
    match status.code() {
        Code::Unauthenticated => bail!(
            "the token was refused by the gateway at {gateway}: {} (get a token with \
             `hidden-front token --player NAME`, pass it with --token or HF_TOKEN, or play as a \
             guest with --guest)",
            board::printable(status.message())
        ),
        Code::PermissionDenied => bail!(
            "the token was accepted but may not play at {gateway}: {}",
            board::printable(status.message())
        ),
        // Whatever the refusal, an address that answers plain HTTP/1 is not a gRPC port (the
        // gateway's gRPC port takes HTTP/2 only), so this probe cannot blame a real gateway.
        _ if guest::speaks_http1(gateway).await => bail!(http_not_grpc(gateway, &status.message())),
        Code::Unimplemented => bail!(
            "{gateway} speaks gRPC but does not serve the player API (hiddenfront.v1.PlayerService): \
             is it an internal port? use the gateway's public gRPC port, e.g. http://127.0.0.1:50051"
        ),
        _ if not_grpc_answer(&status) => bail!(
            "{gateway} does not answer as a Hidden Front gateway ({}); --gateway takes the \
             gateway's gRPC port, e.g. http://127.0.0.1:50051",
            board::printable(status.message())
        ),
        // Busy or briefly unavailable: the address and the token are not shown wrong, and the
        // reconnecting parts of the client handle a gateway that comes and goes.
        _ => Ok(()),
    }
}

/// Whether a call failed because the connection under it went away (the gateway restarting, a
/// dropped network), so the same call may well succeed on a fresh connection.
pub(crate) fn connection_lost(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable | Code::Cancelled => true,
        // A connection that broke below gRPC (accepted, then closed before any answer, as a
        // proxy whose gateway is gone does) is `Unknown` "transport error", with this side's
        // transport error as its source; a server's own `Unknown` answer has no such source.
        Code::Unknown => std::iter::successors(std::error::Error::source(status), |e| e.source())
            .any(|e| e.is::<tonic::transport::Error>()),
        _ => false,
    }
}

/// A refusal for the player: the server's own message, plus a hint where the fix is on this side.
pub fn explain(status: &Status) -> String {
    let message = if status.message().is_empty() {
        status.code().description().to_string()
    } else {
        // The server's words, but never its control characters (they could steer the terminal).
        status
            .message()
            .chars()
            .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
            .collect()
    };
    let hint = match status.code() {
        Code::Unauthenticated => {
            " (get a token with `hidden-front token --player NAME`; pass it with --token or HF_TOKEN)"
        }
        Code::Unimplemented => {
            " (is this a Hidden Front gateway? it does not serve hiddenfront.v1.PlayerService)"
        }
        _ if connection_lost(status) && status.code() != Code::Cancelled => {
            " (is the gateway running?)"
        }
        _ => "",
    };
    format!("{message}{hint}")
}

/// Prints lines to stdout, failing (and so ending the client) if stdout is gone.
pub fn say(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", text.trim_end_matches('\n'))?;
    out.flush()
}

/// Stdin lines, read on a plain thread (a blocking read would hold up the runtime's shutdown if
/// it ran as a tokio blocking task). The channel closes at end of input.
pub fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.blocking_send(line).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    rx
}
