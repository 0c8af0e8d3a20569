//! One game on screen: the board read once when the game opens, then followed by the game's
//! follow on the connection (its events applied with the engine's `GameView::apply`, its status
//! items for presence and clocks), the player's commands sent as requests on the same
//! connection, and the board drawn again when something changed.
//!
//! An action's answer and the events it caused come down the connection in either order. The
//! events are applied from the follow only, each once; the answer is the acknowledgment, and its
//! `version` says which event to wait for before the command is done
//! ([`Game::catch_up`]), so the board after a move always shows it, and the next move is sent
//! against the board that shows it.

use super::board::{self, LastMove, own_side, render, side_name};
use super::commands::{self, Input};
use super::connection::{Connection, Feed, Follow, Request};
use super::reconnect;
use super::{clock, connection_lost, explain, legend, say};
use anyhow::{anyhow, bail};
use hidden_front_proto::v1 as pb;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::{Code, Status};

/// How long the client waits for the follow to deliver events it knows are coming: those an
/// answer acknowledged, or those that ended a game whose board was read ended (the follow can
/// trail an answer or a view by a round trip). Long enough for any live gateway, short enough
/// that a broken follow does not hold the prompt up.
const CATCH_UP: Duration = Duration::from_secs(3);

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

/// Plays (or, with `spectate`, watches) one game until it ends or the player leaves it (which
/// stops its follow, and so the player's presence in it). `in_lobby` says whether `lobby` has
/// somewhere to go back to.
pub async fn play_game(
    connection: Connection,
    game_id: String,
    spectate: bool,
    lines: &mut mpsc::Receiver<String>,
    in_lobby: bool,
) -> anyhow::Result<Left> {
    let view = get_game(&connection, &game_id, spectate)
        .await
        .map_err(|s| anyhow!("cannot open game {game_id:?}: {}", explain(&s)))?;
    let first = view.clone();
    let ended = view.phase() == pb::Phase::Ended;
    // From the start, so the last move before this client arrived is known; events already in
    // the first view are absorbed without being told again.
    let follow = (!ended).then(|| connection.follow_game(&game_id, spectate, 1));
    let mut game = Game::new(connection, follow, game_id, first, spectate);
    game.draw()?;
    if ended {
        say("the game is over.")?;
        return Ok(Left::Ended);
    }
    say("`legend` explains the board's symbols and the pieces.")?;
    say(if in_lobby {
        "type `help` for the commands (`lobby` to go back to the lobby)."
    } else {
        "type `help` for the commands."
    })?;

    loop {
        tokio::select! {
            item = game.next_item(), if game.following() => {
                let Some(first) = item else {
                    game.feed = None;
                    continue;
                };
                let mut batch = vec![first];
                while let Some(more) = game.feed.as_mut().and_then(Follow::try_recv) {
                    batch.push(more);
                }
                game.take_feed(batch).await?;
            }
            line = lines.recv() => {
                let Some(line) = line else { return Ok(Left::Quit) };
                match commands::parse(&line) {
                    Err(message) => say(&message)?,
                    Ok(Input::Quit) => return Ok(Left::Quit),
                    Ok(Input::Lobby) if in_lobby => return Ok(Left::ToLobby),
                    Ok(Input::Lobby) => say("there is no lobby to go back to (started with --game or --watch); `quit` leaves")?,
                    Ok(input) => game.command(input).await?,
                }
            }
        }
        if game.ended() {
            // The board may have been read ended before the follow told how: typically the
            // computer's reply ended the game right after the player's own move. Tell that move,
            // its fight and the end from the follow first, then draw the final board once.
            if !game.told_end && game.following() {
                let deadline = tokio::time::Instant::now() + CATCH_UP;
                while !game.told_end {
                    match tokio::time::timeout_at(deadline, game.next_item()).await {
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
                // The board read after an earlier event was already the ended one.
                say(&format!(
                    "game over: {}",
                    board::describe_outcome(game.view.outcome.as_ref(), game.me)
                ))?;
            }
            say("the game is over.")?;
            return Ok(Left::Ended);
        }
    }
}

/// The game as this player sees it now; asked again on a lost connection, as reading is safe.
async fn get_game(
    connection: &Connection,
    game_id: &str,
    spectate: bool,
) -> Result<pb::GameView, Status> {
    let request = Request::GetGame(pb::PlayerServiceGetGameRequest {
        game_id: game_id.to_string(),
        spectate,
    });
    connection
        .ask_again::<pb::PlayerServiceGetGameResponse>(request)
        .await?
        .game
        .ok_or_else(|| Status::internal("the gateway answered without a game"))
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

/// What one followed item was, for the redraw that follows a batch.
enum Took {
    /// Nothing to draw again for.
    Nothing,
    /// An event the player had not been told.
    News,
    /// The connection is back: draw again from a fresh view.
    Restored,
}

/// The client's state: the last view drawn and what the follow told beyond it.
struct Game {
    connection: Connection,
    /// The game's follow on the connection; `None` once it has stopped for good (or for a game
    /// that was over when it opened).
    feed: Option<Follow>,
    game_id: String,
    /// The gateway's view, as last drawn.
    view: pb::GameView,
    /// The viewer's seat.
    me: Option<pb::Side>,
    /// The last move, from the follow.
    last: Option<LastMove>,
    /// The sequence number `last` came from, so an older copy cannot replace it.
    last_seq: u64,
    /// The highest event sequence number told to the player (or in the first view).
    seen: u64,
    /// The first view's version: events up to it are history, not news.
    opened_at: u64,
    /// What the board on screen shows: the view's version and `last_seq`.
    drawn: Option<(u64, u64)>,
    /// Watching as a spectator (every view and the follow are asked for as one).
    spectate: bool,
    /// Whether the game's end was told as an event (else it is told from the view).
    told_end: bool,
    /// Whether the ended view was fetched but not drawn, waiting for the follow to tell the
    /// events that ended the game, so the final board shows the ending move, not the one before.
    end_undrawn: bool,
    /// Whether the follow has told that the connection is lost and not yet that it is
    /// back, so a command failing meanwhile is told as waiting for the reconnection.
    offline: bool,
    /// The engine's view of the game, followed by the events after the view last read; `None`
    /// when it could not be (then `stale`).
    followed: Option<hidden_front_rules::GameView>,
    /// Whether the next redraw must read the view from the gateway: an event did not follow.
    stale: bool,
    /// The version of the last status item taken: the follow has delivered every event up to
    /// it (those this viewer may see).
    status_at: u64,
}

impl Game {
    fn new(
        connection: Connection,
        feed: Option<Follow>,
        game_id: String,
        view: pb::GameView,
        spectate: bool,
    ) -> Game {
        Game {
            spectate,
            told_end: false,
            end_undrawn: false,
            offline: false,
            connection,
            feed,
            game_id,
            status_at: 0,
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
        self.status_at = self.status_at.max(status.version);
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
        // A view read after a gap may hold the event already (the follow resumes from what it
        // had told, the read is newer): applied again, it would not follow.
        if event.seq > self.view.version {
            self.follow(event);
        }
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

    /// Whether the game's follow still runs.
    fn following(&self) -> bool {
        self.feed.is_some()
    }

    /// The follow's next item; never, once it has stopped (see [`Game::following`]).
    async fn next_item(&mut self) -> Option<Feed> {
        match &mut self.feed {
            Some(feed) => feed.recv().await,
            None => std::future::pending().await,
        }
    }

    /// Handles a batch of followed items in order, redrawing once if any event was news, or
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

    /// Takes one followed item in, telling it; what it was, for the redraw.
    fn take_item(&mut self, item: Feed) -> anyhow::Result<Took> {
        Ok(match item {
            Feed::Event(event) if self.absorb(&event)? => Took::News,
            Feed::Event(_) | Feed::Lobby(_) => Took::Nothing,
            Feed::Status(status) => {
                self.take_status(&status)?;
                Took::Nothing
            }
            Feed::Lost(why) => {
                self.offline = true;
                say(&format!(
                    "connection lost: {why}; reconnecting (every few seconds until it answers)"
                ))?;
                Took::Nothing
            }
            Feed::Restored(from) => {
                self.offline = false;
                say(&format!(
                    "connection restored: following the game again from #{from}"
                ))?;
                Took::Restored
            }
            Feed::Fatal(message) => bail!("the gateway ended the game stream: {message}"),
        })
    }

    /// Takes the follow's items until it has delivered every event up to `version` (an
    /// answer's acknowledgment of the events it caused, which may come before or after it), or
    /// a status item says so, then draws again if anything was news. Not past [`CATCH_UP`], nor
    /// while the connection is lost: the events are told whenever they come.
    async fn catch_up(&mut self, version: u64) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + CATCH_UP;
        let (mut news, mut restored) = (false, false);
        while self.seen.max(self.status_at) < version && self.following() && !self.offline {
            let Ok(item) = tokio::time::timeout_at(deadline, self.next_item()).await else {
                break;
            };
            let Some(item) = item else {
                self.feed = None;
                break;
            };
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
            match get_game(&self.connection, &self.game_id, self.spectate).await {
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
                        // Drawn once the follow has told how it ended (see `play_game`).
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
    async fn command(&mut self, input: Input) -> anyhow::Result<()> {
        let action = match input {
            Input::Nothing | Input::Quit | Input::Lobby => return Ok(()),
            Input::Help => return Ok(say(commands::HELP)?),
            Input::Board => return Ok(self.redraw(true).await?),
            Input::Clock => return Ok(self.clock()?),
            Input::Legend => {
                return Ok(say(&legend::legend(&self.view.rules, Some(&self.view)))?);
            }
            Input::Moves(from) => {
                let from = from.map(|f| commands::node_name(&self.view.rules, &f));
                return Ok(self.list_moves(from).await?);
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
            // The events come from the follow; the answer says up to which one.
            Ok(result) => self.catch_up(result.version).await,
            Err(status) if status.code() == Code::Aborted => {
                say(&format!(
                    "error: {} (the game moved on since this board; here it is now)",
                    explain(&status)
                ))?;
                Ok(self.redraw(true).await?)
            }
            Err(status) if connection_lost(&status) => Ok(say(&self.not_sent(&status))?),
            Err(status) => Ok(say(&format!("error: {}", explain(&status)))?),
        }
    }

    /// What to tell when an action could not reach the gateway (after
    /// [`super::connection::CALL_ATTEMPTS`]): while the follow has told that the connection is lost, that the client is reconnecting
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
        let context = Some(pb::ActionContext {
            game_id: self.game_id.clone(),
            idempotency_key: uuid::Uuid::new_v4().to_string(),
            expected_version: match action {
                Action::Play { .. } => Some(self.view.version),
                _ => None,
            },
        });
        let request = match action {
            Action::Play { from, to } => Request::Play(pb::PlayRequest {
                context,
                r#move: Some(pb::Move {
                    from: from.clone(),
                    to: to.clone(),
                }),
            }),
            Action::Swap { a, b } => Request::Swap(pb::SwapRequest {
                context,
                square_a: a.clone(),
                square_b: b.clone(),
            }),
            Action::Shuffle => Request::Reshuffle(pb::ReshuffleRequest { context }),
            Action::Confirm => Request::Confirm(pb::ConfirmRequest { context }),
            Action::OfferDraw => Request::ProposeDraw(pb::ProposeDrawRequest { context }),
            Action::AnswerDraw(accept) => Request::RespondDraw(pb::RespondDrawRequest {
                context,
                accept: *accept,
            }),
            Action::Resign => Request::Concede(pb::ConcedeRequest { context }),
        };
        self.connection.ask_again(request).await
    }

    /// Prints the clock lines now, from the status the follow last brought (it comes with every
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
                let request = Request::LegalMoves(pb::LegalMovesRequest {
                    game_id: self.game_id.clone(),
                    min_version: None,
                });
                let answer = self.connection.ask::<pb::LegalMovesResponse>(request).await;
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
