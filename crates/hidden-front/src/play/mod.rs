//! `hidden-front play`: a plain-text terminal client, so a person can play a real game through the
//! gateway's public `PlayerService`, e.g. one tmux pane per player.
//!
//! The client holds no game logic of its own. The board it draws is the gateway's `GetGame` view
//! when the game opens (and again after the connection came back, or on `board`), followed from
//! there by the stream's events with the rules engine's `GameView::apply` (the same function the
//! engine's tests hold to `view` after every event), and by the stream's status items for presence
//! and clocks; so it reads the view once, not per event. An event that does not follow from the
//! view on screen (which the referee never sends) makes the next redraw fetch the view again. The
//! stream also says *what happened* (the last move and its fight, which a view does not carry). Typed commands and stream events are read concurrently and
//! handled one at a time on one task, so output never interleaves mid-board.
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
pub mod feed;
pub mod guest;
pub mod legend;
pub mod lobby;
pub mod reconnect;

use anyhow::{Context as _, anyhow, bail};
use board::{LastMove, own_side, printable, render, side_name};
use commands::Input;
use feed::Feed;
use hidden_front_proto::v1 as pb;
use hidden_front_proto::v1::player_service_client::PlayerServiceClient;
use std::future::Future;
use std::io::{BufRead as _, Write as _};
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
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

/// The player API client as this command uses it: every call carries the bearer token.
pub type Client = PlayerServiceClient<InterceptedService<Channel, Bearer>>;

/// Adds `authorization: Bearer <token>` to every call, since the gateway authenticates each call
/// (streams included) rather than a session.
#[derive(Clone)]
pub struct Bearer(MetadataValue<Ascii>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

/// How long a single call may take before the client gives up on it and says so, so a hung
/// gateway cannot freeze the prompt. The event stream is not bounded by it.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// How many times a call is tried when the connection fails under it, waiting between attempts
/// as every reconnect does ([`reconnect::backoff`]: so about a second in all). An action goes
/// again with the same idempotency key, which makes that safe: a second copy returns the first
/// answer. A call that still fails is told to the player, who types it again once the connection
/// is restored.
const CALL_ATTEMPTS: u32 = 3;

/// How long the client waits, once a view says the game has ended, for the event stream to tell
/// the events that ended it (the stream can trail the view by a round trip): long enough for any
/// live gateway, short enough that a broken stream does not hold the end up.
const END_CATCH_UP: Duration = Duration::from_secs(3);

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
    let client = connect(&args.gateway, &token).await?;
    check_gateway(&client, &args.gateway).await?;
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
        (None, None) => return lobby::run(client, &mut lines).await,
    };
    play_game(client, game_id, spectate, &mut lines, false)
        .await
        .map(|_| ())
}

/// How a game's loop ended, so the lobby knows whether to carry on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// The game is over.
    Ended,
    /// The player typed `lobby`.
    ToLobby,
    /// The player typed `quit`, or input ended.
    Quit,
}

/// Plays (or, with `spectate`, watches) one game until it ends or the player leaves it.
/// `in_lobby` says whether `lobby` has somewhere to go back to.
pub async fn play_game(
    client: Client,
    game_id: String,
    spectate: bool,
    lines: &mut mpsc::Receiver<String>,
    in_lobby: bool,
) -> anyhow::Result<Left> {
    let mut client = client;
    let view = get_game(&mut client, &game_id, spectate)
        .await
        .map_err(|s| anyhow!("cannot open game {game_id:?}: {}", explain(&s)))?;
    let mut game = Game::new(client, game_id, view, spectate);
    game.draw()?;
    if game.ended() {
        say("the game is over.")?;
        return Ok(Left::Ended);
    }
    say("`legend` explains the board's symbols and the pieces.")?;
    say(if in_lobby {
        "type `help` for the commands (`lobby` to go back to the lobby)."
    } else {
        "type `help` for the commands."
    })?;

    // From the start, so the last move before this client arrived is known; events already in
    // the first view are absorbed without being told again.
    let (feed_tx, mut feed_rx) = mpsc::channel(256);
    let follower = tokio::spawn(feed::follow(
        game.client.clone(),
        game.game_id.clone(),
        1,
        spectate,
        feed_tx,
    ));
    let mut feed_open = true;
    let result = loop {
        tokio::select! {
            item = feed_rx.recv(), if feed_open => {
                let Some(first) = item else {
                    feed_open = false;
                    continue;
                };
                let mut batch = vec![first];
                while let Ok(more) = feed_rx.try_recv() {
                    batch.push(more);
                }
                match game.take_feed(batch).await {
                    Ok(()) => {}
                    Err(e) => break Err(e),
                }
            }
            line = lines.recv() => {
                let Some(line) = line else { break Ok(Left::Quit) };
                match commands::parse(&line) {
                    Err(message) => say(&message)?,
                    Ok(Input::Quit) => break Ok(Left::Quit),
                    Ok(Input::Lobby) if in_lobby => break Ok(Left::ToLobby),
                    Ok(Input::Lobby) => say("there is no lobby to go back to (started with --game or --watch); `quit` leaves")?,
                    Ok(input) => game.command(input).await?,
                }
            }
        }
        if game.ended() {
            // The board may have been fetched ended before the stream told how: typically the
            // computer's reply ended the game right after the player's own move. Tell that move,
            // its fight and the end from the stream first, then draw the final board once.
            if !game.told_end && feed_open {
                let deadline = tokio::time::Instant::now() + END_CATCH_UP;
                while !game.told_end {
                    match tokio::time::timeout_at(deadline, feed_rx.recv()).await {
                        Ok(Some(item)) => {
                            game.take_item(item)?;
                        }
                        Ok(None) | Err(_) => break,
                    }
                }
            }
            if game.end_undrawn {
                game.end_undrawn = false;
                game.draw()?;
            }
            if !game.told_end {
                // The board fetched after an earlier event was already the ended one.
                say(&format!(
                    "game over: {}",
                    board::describe_outcome(game.view.outcome.as_ref(), game.me)
                ))?;
            }
            say("the game is over.")?;
            break Ok(Left::Ended);
        }
    };
    follower.abort();
    result
}

/// Opens the connection, failing now with a clear message if the gateway cannot be reached rather
/// than at the first command.
async fn connect(gateway: &str, token: &str) -> anyhow::Result<Client> {
    let token = token.strip_prefix("Bearer ").unwrap_or(token).trim();
    let header: MetadataValue<Ascii> = format!("Bearer {token}")
        .parse()
        .context("the token holds characters that cannot go in a gRPC header")?;
    let endpoint = Endpoint::from_shared(gateway.to_string())
        .with_context(|| {
            format!("{gateway:?} is not a gateway address (like http://127.0.0.1:50051)")
        })?
        .connect_timeout(Duration::from_secs(5))
        // Pings find a dead connection under an idle stream, so the follower resumes promptly.
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    let channel = match endpoint.connect().await {
        Ok(channel) => channel,
        Err(e) if guest::speaks_http1(gateway).await => bail!(http_not_grpc(gateway, &e)),
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "cannot reach the gateway at {gateway} (is it running? see --gateway / HF_GATEWAY)"
            )));
        }
    };
    Ok(PlayerServiceClient::with_interceptor(
        channel,
        Bearer(header),
    ))
}

/// What to say when `--gateway` answers plain HTTP: the gateway's HTTP port (the page, guest
/// sign-in) was given where its gRPC port belongs, a mistake tonic itself reports only as a
/// protocol error ("invalid compression flag") that names neither port.
fn http_not_grpc(gateway: &str, error: &dyn std::fmt::Display) -> String {
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

/// The one cheap call at start that proves the address speaks the player API and accepts the
/// token (`ListMyGames`, active games only), so a wrong port or a bad token is told now, in
/// words, instead of at the first command, after the lobby or the board has opened. Every
/// failure ends the client with a message naming what is wrong and what to pass instead.
async fn check_gateway(client: &Client, gateway: &str) -> anyhow::Result<()> {
    let mut client = client.clone();
    let answer = within(client.list_my_games(pb::ListMyGamesRequest { active_only: true })).await;
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

/// One unary call, bounded by [`CALL_TIMEOUT`], answering its message.
pub async fn within<T>(
    call: impl Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, Status> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(answer) => answer.map(tonic::Response::into_inner),
        Err(_) => Err(Status::deadline_exceeded(format!(
            "no answer from the gateway within {} s",
            CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// Whether a call failed because the connection under it went away (the gateway restarting, a
/// dropped network), so the same call may well succeed on a fresh connection.
fn connection_lost(status: &Status) -> bool {
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

/// The game as this player sees it now; asked again on a lost connection, as reading is safe.
async fn get_game(
    client: &mut Client,
    game_id: &str,
    spectate: bool,
) -> Result<pb::GameView, Status> {
    let mut attempt = 1;
    let mut backoff = reconnect::backoff();
    loop {
        let answer = within(client.get_game(pb::PlayerServiceGetGameRequest {
            game_id: game_id.to_string(),
            spectate,
        }))
        .await;
        match answer {
            Err(status) if connection_lost(&status) && attempt < CALL_ATTEMPTS => {
                backoff.wait().await;
                attempt += 1;
            }
            answer => {
                return answer?
                    .game
                    .ok_or_else(|| Status::internal("the gateway answered without a game"));
            }
        }
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

/// An action the player takes; each goes out with a fresh idempotency key.
#[derive(Debug, Clone)]
enum Action {
    Play { from: String, to: String },
    Swap { a: String, b: String },
    Shuffle,
    Confirm,
    OfferDraw,
    AnswerDraw(bool),
    Resign,
}

/// What one stream item was, for the redraw that follows a batch.
enum Took {
    /// Nothing to draw again for.
    Nothing,
    /// An event the player had not been told.
    News,
    /// The connection is back: draw again from a fresh view.
    Restored,
}

/// The client's state: the last view drawn and what the event stream told beyond it.
struct Game {
    client: Client,
    game_id: String,
    /// The gateway's view, as last drawn.
    view: pb::GameView,
    /// The viewer's seat.
    me: Option<pb::Side>,
    /// The last move, from the stream or an action's answer.
    last: Option<LastMove>,
    /// The sequence number `last` came from, so an older copy cannot replace it.
    last_seq: u64,
    /// The highest event sequence number told to the player (or in the first view).
    seen: u64,
    /// The first view's version: events up to it are history, not news.
    opened_at: u64,
    /// What the board on screen shows: the view's version and `last_seq`.
    drawn: Option<(u64, u64)>,
    /// Watching as a spectator (every view and the stream are asked for as one).
    spectate: bool,
    /// Whether the game's end was told as an event (else it is told from the view).
    told_end: bool,
    /// Whether the ended view was fetched but not drawn, waiting for the stream to tell the
    /// events that ended the game, so the final board shows the ending move, not the one before.
    end_undrawn: bool,
    /// Whether the event stream has told that the connection is lost and not yet that it is
    /// back, so a command failing meanwhile is told as waiting for the reconnection.
    offline: bool,
    /// The engine's view of the game, followed by the events after the view last read; `None`
    /// when it could not be (then `stale`).
    followed: Option<hidden_front_rules::GameView>,
    /// Whether the next redraw must read the view from the gateway: an event did not follow.
    stale: bool,
}

impl Game {
    fn new(client: Client, game_id: String, view: pb::GameView, spectate: bool) -> Game {
        Game {
            spectate,
            told_end: false,
            end_undrawn: false,
            offline: false,
            client,
            game_id,
            me: own_side(&view),
            last: None,
            last_seq: 0,
            seen: view.version,
            opened_at: view.version,
            drawn: Some((view.version, 0)),
            followed: hidden_front_wire::game_view_from_proto(&view).ok(),
            stale: false,
            view,
        }
    }

    /// Follows the view by one new event: the engine applies it to the view on screen, and what
    /// the engine's view does not hold (the players, the time control, presence and clocks, which
    /// status items bring) is kept. An event that does not follow leaves the view for the next
    /// redraw to read again.
    fn follow(&mut self, event: &pb::GameEvent) {
        let Some(followed) = &mut self.followed else {
            self.stale = true;
            return;
        };
        let applied = hidden_front_wire::view_event_from_proto(&followed.rules, event)
            .ok()
            .and_then(|shown| followed.apply(&shown).ok());
        if applied.is_none() {
            self.followed = None;
            self.stale = true;
            return;
        }
        let old = &self.view;
        let mut next = hidden_front_wire::game_view(
            followed,
            hidden_front_wire::Seats {
                game_id: &old.game_id,
                south_player: &old.south_player,
                north_player: &old.north_player,
            },
            event.seq,
            old.time_control.clone().unwrap_or_default(),
        );
        next.south_connected = old.south_connected;
        next.north_connected = old.north_connected;
        if next.phase() != pb::Phase::Ended {
            next.turn_deadline_unix_millis = old.turn_deadline_unix_millis;
            next.south_away_deadline_unix_millis = old.south_away_deadline_unix_millis;
            next.north_away_deadline_unix_millis = old.north_away_deadline_unix_millis;
        }
        self.view = next;
    }

    /// Takes a status item in: presence and clocks for the view on screen (not one older than
    /// it, which a command's answer may have moved past), telling when the other seat leaves or
    /// comes back.
    fn take_status(&mut self, status: &pb::GameStatus) -> std::io::Result<()> {
        if status.version < self.view.version || self.ended() {
            return Ok(());
        }
        let view = &mut self.view;
        let was = [view.south_connected, view.north_connected];
        view.south_connected = status.south_connected;
        view.north_connected = status.north_connected;
        view.turn_deadline_unix_millis = status.turn_deadline_unix_millis;
        view.south_away_deadline_unix_millis = status.south_away_deadline_unix_millis;
        view.north_away_deadline_unix_millis = status.north_away_deadline_unix_millis;
        view.south_timeouts = status.south_timeouts;
        view.north_timeouts = status.north_timeouts;
        view.draw_offer = status.draw_offer;
        let now = [status.south_connected, status.north_connected];
        for (i, side) in [pb::Side::South, pb::Side::North].into_iter().enumerate() {
            if Some(side) == self.me || was[i] == now[i] {
                continue;
            }
            let away = [
                status.south_away_deadline_unix_millis,
                status.north_away_deadline_unix_millis,
            ][i];
            let line = match (now[i], away) {
                (true, _) => format!("{} is back", side_name(side)),
                (false, 0) => format!("{} is away", side_name(side)),
                (false, until) => format!(
                    "{} is away: back within {} s or loses",
                    side_name(side),
                    clock::seconds_left(until, clock::server_now_unix_millis())
                ),
            };
            say(&line)?;
        }
        Ok(())
    }

    fn ended(&self) -> bool {
        self.view.phase() == pb::Phase::Ended
    }

    /// Prints the board; its status line says whose move it is and what to type.
    fn draw(&self) -> std::io::Result<()> {
        say(&render(&self.view, self.last.as_ref()))
    }

    /// Takes one event in; true if it is news (the player has not been told about it yet).
    fn absorb(&mut self, event: &pb::GameEvent) -> std::io::Result<bool> {
        if let Some(pb::game_event::Event::Moved(moved)) = &event.event
            && event.seq > self.last_seq
            && let Some(last) = LastMove::from_event(moved)
        {
            self.last = Some(last);
            self.last_seq = event.seq;
        }
        if event.seq <= self.seen {
            if event.seq == self.opened_at
                && let Some(last) = &self.last
            {
                say(&format!(
                    "last move: {}",
                    board::describe_move(last, self.me)
                ))?;
            }
            return Ok(false);
        }
        self.seen = event.seq;
        self.follow(event);
        if let Some(pb::game_event::Event::Ended(ended)) = &event.event {
            self.told_end = true;
            // The final board names every piece of the last move from the end's reveal; a
            // view fetched before the end carries none, so the event's is kept on it.
            if self.view.reveal.is_none() {
                self.view.reveal = ended.reveal.clone();
            }
        }
        say(&board::describe_event(event, self.me))?;
        Ok(true)
    }

    /// Handles a batch of stream items in order, redrawing once if any event was news, or
    /// if the connection came back (then from a fresh view even if nothing happened meanwhile:
    /// a server back from an outage has moved its deadlines by the outage's length).
    async fn take_feed(&mut self, batch: Vec<Feed>) -> anyhow::Result<()> {
        let mut news = false;
        let mut restored = false;
        for item in batch {
            match self.take_item(item)? {
                Took::Nothing => {}
                Took::News => news = true,
                Took::Restored => restored = true,
            }
        }
        if news || restored {
            self.redraw(restored).await?;
        }
        Ok(())
    }

    /// Takes one stream item in, telling it; what it was, for the redraw.
    fn take_item(&mut self, item: Feed) -> anyhow::Result<Took> {
        Ok(match item {
            Feed::Event(event) if self.absorb(&event)? => Took::News,
            Feed::Event(_) => Took::Nothing,
            Feed::Status(status) => {
                self.take_status(&status)?;
                Took::Nothing
            }
            Feed::Lost(line) => {
                self.offline = true;
                say(&line)?;
                Took::Nothing
            }
            Feed::Restored(line) => {
                self.offline = false;
                say(&line)?;
                Took::Restored
            }
            Feed::Fatal(message) => bail!("the gateway ended the game stream: {message}"),
        })
    }

    /// Draws the board: the followed view, unless `fetch` (after a gap, on `board`, after a
    /// refusal for a stale board) or an event did not follow, when it reads the view from the
    /// gateway first. A read view behind the events already told (a lagging replica) is asked
    /// for again a few times; a failure is told and the old board kept. A followed board that is
    /// the one on screen is not drawn again.
    async fn redraw(&mut self, fetch: bool) -> std::io::Result<()> {
        if !fetch && !self.stale {
            if self.ended() && !self.told_end {
                self.end_undrawn = true;
                return Ok(());
            }
            let drawn = (self.view.version, self.last_seq);
            if self.drawn == Some(drawn) {
                return Ok(());
            }
            self.drawn = Some(drawn);
            return self.draw();
        }
        let force = fetch;
        let mut attempt = 0;
        let mut backoff = reconnect::backoff();
        loop {
            match get_game(&mut self.client, &self.game_id, self.spectate).await {
                Ok(view) if view.version < self.seen && attempt < 3 => {
                    attempt += 1;
                    backoff.wait().await;
                }
                Ok(view) => {
                    let drawn = (view.version, self.last_seq);
                    let reveal = self.view.reveal.take();
                    self.followed = hidden_front_wire::game_view_from_proto(&view).ok();
                    self.stale = self.followed.is_none();
                    self.view = view;
                    if self.view.reveal.is_none() {
                        self.view.reveal = reveal;
                    }
                    if self.ended() && !self.told_end {
                        // Drawn once the stream has told how it ended (see `play_game`).
                        self.end_undrawn = true;
                        return Ok(());
                    }
                    if !force && self.drawn == Some(drawn) {
                        return Ok(()); // the same board as on screen
                    }
                    self.drawn = Some(drawn);
                    return self.draw();
                }
                Err(status) => {
                    return say(&format!(
                        "cannot fetch the board: {} (type `board` to try again)",
                        explain(&status)
                    ));
                }
            }
        }
    }

    /// Carries out one command typed by the player.
    async fn command(&mut self, input: Input) -> std::io::Result<()> {
        let action = match input {
            Input::Nothing | Input::Quit | Input::Lobby => return Ok(()),
            Input::Help => return say(commands::HELP),
            Input::Board => return self.redraw(true).await,
            Input::Clock => return self.clock(),
            Input::Legend => return say(&legend::legend(&self.view.rules, Some(&self.view))),
            Input::Moves(from) => {
                let from = from.map(|f| commands::node_name(&self.view.rules, &f));
                return self.list_moves(from).await;
            }
            Input::Move { from, to } => Action::Play {
                from: commands::node_name(&self.view.rules, &from),
                to: commands::node_name(&self.view.rules, &to),
            },
            Input::Swap { a, b } => Action::Swap {
                a: commands::node_name(&self.view.rules, &a),
                b: commands::node_name(&self.view.rules, &b),
            },
            Input::Shuffle => Action::Shuffle,
            Input::Confirm => Action::Confirm,
            Input::Draw => Action::OfferDraw,
            Input::Accept => Action::AnswerDraw(true),
            Input::Decline => Action::AnswerDraw(false),
            Input::Resign => Action::Resign,
        };
        match self.act(&action).await {
            Ok(result) => {
                let mut events = result.events;
                events.sort_by_key(|e| e.seq);
                let mut news = false;
                for event in &events {
                    news |= self.absorb(event)?;
                }
                if news {
                    self.redraw(false).await?;
                }
                Ok(())
            }
            Err(status) if status.code() == Code::Aborted => {
                say(&format!(
                    "error: {} (the game moved on since this board; here it is now)",
                    explain(&status)
                ))?;
                self.redraw(true).await
            }
            Err(status) if connection_lost(&status) => say(&self.not_sent(&status)),
            Err(status) => say(&format!("error: {}", explain(&status))),
        }
    }

    /// What to tell when an action could not reach the gateway (after [`CALL_ATTEMPTS`]): while
    /// the event stream has told that the connection is lost, that the client is reconnecting
    /// and will say when it is back (the board drawn then shows whether anything happened).
    fn not_sent(&self, status: &Status) -> String {
        if self.offline {
            "error: the connection is lost and the client is reconnecting; type it again once it says \"connection restored\"".to_string()
        } else {
            format!(
                "error: {} (the connection failed; type it again)",
                explain(status)
            )
        }
    }

    /// Sends an action, again with the same key if the connection failed under it. A move pins
    /// the version of the board the player looked at, so it is refused rather than played on a
    /// position the player has not seen.
    async fn act(&mut self, action: &Action) -> Result<pb::ActionResult, Status> {
        let key = uuid::Uuid::new_v4().to_string();
        let expected_version = match action {
            Action::Play { .. } => Some(self.view.version),
            _ => None,
        };
        let mut attempt = 1;
        let mut backoff = reconnect::backoff();
        loop {
            let context = Some(pb::ActionContext {
                game_id: self.game_id.clone(),
                idempotency_key: key.clone(),
                expected_version,
            });
            let client = &mut self.client;
            let answer = match action {
                Action::Play { from, to } => within(client.play(pb::PlayRequest {
                    context,
                    r#move: Some(pb::Move {
                        from: from.clone(),
                        to: to.clone(),
                    }),
                }))
                .await
                .map(|r| r.result),
                Action::Swap { a, b } => within(client.swap(pb::SwapRequest {
                    context,
                    square_a: a.clone(),
                    square_b: b.clone(),
                }))
                .await
                .map(|r| r.result),
                Action::Shuffle => within(client.reshuffle(pb::ReshuffleRequest { context }))
                    .await
                    .map(|r| r.result),
                Action::Confirm => within(client.confirm(pb::ConfirmRequest { context }))
                    .await
                    .map(|r| r.result),
                Action::OfferDraw => {
                    within(client.propose_draw(pb::ProposeDrawRequest { context }))
                        .await
                        .map(|r| r.result)
                }
                Action::AnswerDraw(accept) => within(client.respond_draw(pb::RespondDrawRequest {
                    context,
                    accept: *accept,
                }))
                .await
                .map(|r| r.result),
                Action::Resign => within(client.concede(pb::ConcedeRequest { context }))
                    .await
                    .map(|r| r.result),
            };
            match answer {
                Err(status) if connection_lost(&status) && attempt < CALL_ATTEMPTS => {
                    backoff.wait().await;
                    attempt += 1;
                }
                other => return other.map(Option::unwrap_or_default),
            }
        }
    }

    /// Prints the clock lines now, from the status the stream last brought (it comes with every
    /// change, so no read is needed).
    fn clock(&self) -> std::io::Result<()> {
        let mut lines = clock::clock_lines(&self.view, clock::server_now_unix_millis());
        if lines.is_empty() {
            return say("no clock runs: the game is over");
        }
        if self.offline {
            // Not the server's clocks now (while it is down they stand still): say so.
            lines.push(
                "(the clocks as last heard: the connection is lost; the server's clocks stand still while it is down)"
                    .to_string(),
            );
        }
        say(&lines.join("\n"))
    }

    /// Prints the player's legal moves, grouped by the square they start from: from the followed
    /// board (the engine's `GameView::own_moves`), or the server's when there is none.
    async fn list_moves(&mut self, from: Option<String>) -> std::io::Result<()> {
        let moves = match &self.followed {
            // From the board on screen, with the engine in this binary: no call, so it works
            // while the connection is lost too. On the player's turn only, as the server answers.
            Some(followed) if !self.stale => {
                if followed.to_move.is_some() && followed.to_move == followed.viewer.side() {
                    followed
                        .own_moves()
                        .into_iter()
                        .map(|mv| hidden_front_wire::move_to_proto(&followed.rules, mv))
                        .collect()
                } else {
                    Vec::new()
                }
            }
            _ => {
                let answer = within(self.client.legal_moves(pb::LegalMovesRequest {
                    game_id: self.game_id.clone(),
                    min_version: None,
                }))
                .await;
                match answer {
                    Ok(answer) => answer.moves,
                    Err(status) => return say(&format!("error: {}", explain(&status))),
                }
            }
        };
        let mut grouped: std::collections::BTreeMap<(u8, u8, String), Vec<String>> =
            std::collections::BTreeMap::new();
        for mv in moves {
            if from
                .as_deref()
                .is_some_and(|f| !mv.from.eq_ignore_ascii_case(f))
            {
                continue;
            }
            // Board order (A1, A2, ..., E12) where the name is a square, else after them.
            let key = match board::Square::parse(&mv.from) {
                Some(sq) => (sq.col, sq.row, mv.from.clone()),
                None => (u8::MAX, 0, mv.from.clone()),
            };
            grouped.entry(key).or_default().push(mv.to);
        }
        if grouped.is_empty() {
            let why = match (self.view.phase(), self.me) {
                (pb::Phase::Play, Some(me)) if self.view.to_move() != me => {
                    format!(" (it is {}'s turn)", side_name(self.view.to_move()))
                }
                (pb::Phase::Deployment, _) => " (the game is still in deployment)".to_string(),
                _ => String::new(),
            };
            return say(&format!("no legal moves{why}"));
        }
        let mut text = String::from("legal moves:\n");
        for ((_, _, from), tos) in grouped {
            text.push_str(&format!("  {from} -> {}\n", tos.join(" ")));
        }
        say(&text)
    }
}
