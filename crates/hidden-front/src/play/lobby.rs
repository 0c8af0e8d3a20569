//! The lobby: what a player does before (and between) games. Play the computer, find a match
//! (casual or rated, with the wait shown and `cancel` to leave the queue), create an invite (its
//! link and code printed, then waiting for the friend) or accept one, wait for the next game an
//! organiser pairs (`next`: a tournament's round, a bulk), spectate a game, list the own games
//! and the rating; then the game is played in [`super::play_game`], and the player comes back
//! here when it ends.
//!
//! Every request goes on the session's one connection, and a match or an accepted invite is
//! pushed on it by the lobby's follow (`follow_lobby`) while the player waits, never polled. The
//! lobby is followed from the player's first stored event, so a match found between the request
//! and the follow is not missed; what is waited for is picked out by the ticket id or invite code
//! this client chose or was given, so older events cannot be mistaken for it; an organised game,
//! which the client did not ask for, is opened only while it is still being played.

use super::commands::{self, LOBBY_HELP, LobbyInput, RULES_LIST};
use super::connection::{Connection, Feed, Request};
use super::{Left, explain, play_game, say};
use hidden_front_proto::v1 as pb;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

use super::board::{printable, side_name};

/// How often the wait for an opponent or a friend is shown again.
const WAIT_TICK: Duration = Duration::from_secs(10);

/// Where a wait ended.
enum Waited {
    /// In a game: its id.
    Game(String),
    /// Back to the lobby (cancelled, expired, or the stream failed).
    Lobby,
    /// The player quit (or input ended).
    Quit,
}

/// Runs the lobby until the player quits or input ends.
pub async fn run(connection: Connection, lines: &mut mpsc::Receiver<String>) -> anyhow::Result<()> {
    let mut lobby = Lobby { connection };
    say("lobby: play the computer, find a match, invite a friend or watch a game (type `help`).")?;
    lobby.in_progress_hint().await?;
    loop {
        let Some(line) = lines.recv().await else {
            return Ok(());
        };
        let input = match commands::parse_lobby(&line) {
            Ok(input) => input,
            Err(message) => {
                say(&message)?;
                continue;
            }
        };
        let game = match input {
            LobbyInput::Nothing => continue,
            LobbyInput::Help => {
                say(LOBBY_HELP)?;
                continue;
            }
            LobbyInput::Rules => {
                say(RULES_LIST)?;
                continue;
            }
            LobbyInput::Quit => return Ok(()),
            LobbyInput::Cancel => {
                say("nothing to cancel: you are not waiting for anyone")?;
                continue;
            }
            LobbyInput::Games => {
                lobby.games().await?;
                continue;
            }
            LobbyInput::Rating => {
                lobby.rating().await?;
                continue;
            }
            LobbyInput::Tournaments => {
                lobby.tournaments().await?;
                continue;
            }
            LobbyInput::Join(id) => {
                lobby.enter(&id, true).await?;
                continue;
            }
            LobbyInput::Withdraw(id) => {
                lobby.enter(&id, false).await?;
                continue;
            }
            LobbyInput::Standings(id) => {
                lobby.standings(&id).await?;
                continue;
            }
            LobbyInput::Computer {
                rules,
                north,
                level,
                time_control,
            } => lobby.computer(&rules, north, level, &time_control).await?,
            LobbyInput::Accept(code) => lobby.accept(&code).await?,
            LobbyInput::Open(game) => lobby.open(game).await?,
            LobbyInput::Watch(game) => Some((game, true)),
            LobbyInput::Match {
                rules,
                time_control,
                rated,
            } => match lobby
                .find_match(&rules, &time_control, rated, lines)
                .await?
            {
                Waited::Game(game) => Some((game, false)),
                Waited::Lobby => None,
                Waited::Quit => return Ok(()),
            },
            LobbyInput::Invite {
                rules,
                time_control,
            } => match lobby.invite(&rules, &time_control, lines).await? {
                Waited::Game(game) => Some((game, false)),
                Waited::Lobby => None,
                Waited::Quit => return Ok(()),
            },
            LobbyInput::Next => match lobby
                .wait(&Wanted::Organised, "your next organised game", lines)
                .await?
            {
                Waited::Game(game) => Some((game, false)),
                Waited::Lobby => None,
                Waited::Quit => return Ok(()),
            },
        };
        let Some((game_id, spectate)) = game else {
            continue;
        };
        match play_game(lobby.connection.clone(), game_id, spectate, lines, true).await {
            Ok(Left::Quit) => return Ok(()),
            Ok(Left::Ended) | Ok(Left::ToLobby) => {
                say("back in the lobby (type `help` for the commands).")?;
            }
            Err(e) => say(&format!("error: {e:#}\nback in the lobby."))?,
        }
    }
}

/// The lobby's connection.
struct Lobby {
    connection: Connection,
}

impl Lobby {
    /// The player's games (only those in progress with `active_only`).
    async fn list_my_games(
        &self,
        active_only: bool,
    ) -> Result<pb::ListMyGamesResponse, tonic::Status> {
        let request = Request::ListMyGames(pb::ListMyGamesRequest { active_only });
        self.connection.ask(request).await
    }

    /// The player's games in progress, or `None` after telling the player they could not be
    /// listed.
    async fn games_in_progress(&self) -> anyhow::Result<Option<Vec<pb::GameSummary>>> {
        match self.list_my_games(true).await {
            Ok(answer) => Ok(Some(answer.games)),
            Err(status) => {
                say(&format!(
                    "error: cannot list your games: {}",
                    explain(&status)
                ))?;
                Ok(None)
            }
        }
    }

    /// Tells the player about games still in progress, which they may want to go back to.
    async fn in_progress_hint(&mut self) -> anyhow::Result<()> {
        let Ok(answer) = self.list_my_games(true).await else {
            return Ok(()); // the commands will say what is wrong
        };
        if answer.games.is_empty() {
            return Ok(());
        }
        let mut text = String::from("your games in progress (`open GAME` to go back):\n");
        for game in &answer.games {
            text.push_str(&summary_line(game));
        }
        say(&text)?;
        Ok(())
    }

    /// Lists every game of the player, those in progress first.
    async fn games(&mut self) -> anyhow::Result<()> {
        let answer = self.list_my_games(false).await;
        let mut games = match answer {
            Ok(answer) => answer.games,
            Err(status) => {
                say(&format!(
                    "error: cannot list your games: {}",
                    explain(&status)
                ))?;
                return Ok(());
            }
        };
        if games.is_empty() {
            say("you have no games yet")?;
            return Ok(());
        }
        games.sort_by_key(|g| g.phase() == pb::Phase::Ended);
        let mut text = format!("your games ({}):\n", games.len());
        for game in &games {
            text.push_str(&summary_line(game));
        }
        say(&text)?;
        Ok(())
    }

    /// Lists the tournaments open to the player or with the player in them.
    async fn tournaments(&mut self) -> anyhow::Result<()> {
        let request = Request::ListTournaments(pb::PlayerServiceListTournamentsRequest {});
        let answer = match (self.connection)
            .ask::<pb::PlayerServiceListTournamentsResponse>(request)
            .await
        {
            Ok(answer) => answer,
            Err(status) => return Ok(say(&format!("error: {}", explain(&status)))?),
        };
        if answer.tournaments.is_empty() {
            return Ok(say("no tournament is open to you now")?);
        }
        let mut text = format!("tournaments ({}):\n", answer.tournaments.len());
        for t in &answer.tournaments {
            text.push_str(&tournament_line(t));
        }
        text.push_str("(`join ID`, `withdraw ID`, `standings ID`; `next` waits for your game)");
        Ok(say(&text)?)
    }

    /// Joins (`join`) or withdraws from a tournament.
    async fn enter(&mut self, id: &str, join: bool) -> anyhow::Result<()> {
        let tournament_id = id.to_string();
        let answer = if join {
            (self.connection)
                .ask::<pb::PlayerServiceJoinTournamentResponse>(Request::JoinTournament(
                    pb::PlayerServiceJoinTournamentRequest { tournament_id },
                ))
                .await
                .map(|a| a.tournament)
        } else {
            (self.connection)
                .ask::<pb::PlayerServiceWithdrawTournamentResponse>(Request::WithdrawTournament(
                    pb::PlayerServiceWithdrawTournamentRequest { tournament_id },
                ))
                .await
                .map(|a| a.tournament)
        };
        match answer {
            Ok(Some(t)) => {
                let id = printable(&t.tournament_id);
                // An arena under way takes a withdrawal as a pause and a join as the return.
                let arena_under_way = t.format() == pb::TournamentFormat::Arena
                    && t.state() == pb::TournamentState::Running;
                Ok(say(&match (join, arena_under_way) {
                    (true, true) => format!(
                        "you play in {id}: its next wave pairs you; `next` waits for your game"
                    ),
                    (false, true) => format!(
                        "paused in {id}: no new game pairs you until you `join {id}` again; your points stay"
                    ),
                    (true, false) => format!(
                        "you are in {id} ({} players); `next` waits for your game when it starts",
                        t.entrants.len()
                    ),
                    (false, false) => format!("you left {id} ({} players)", t.entrants.len()),
                })?)
            }
            Ok(None) => Ok(say("the server answered without the tournament")?),
            Err(status) => Ok(say(&format!("error: {}", explain(&status)))?),
        }
    }

    /// Prints a tournament's rounds and standings.
    async fn standings(&mut self, id: &str) -> anyhow::Result<()> {
        let request = Request::GetTournament(pb::PlayerServiceGetTournamentRequest {
            tournament_id: id.to_string(),
        });
        let t = match (self.connection)
            .ask::<pb::PlayerServiceGetTournamentResponse>(request)
            .await
        {
            Ok(pb::PlayerServiceGetTournamentResponse {
                tournament: Some(t),
            }) => t,
            Ok(_) => return Ok(say("the server answered without the tournament")?),
            Err(status) => return Ok(say(&format!("error: {}", explain(&status)))?),
        };
        let mut text = tournament_line(&t);
        for s in &t.standings {
            text.push_str(&format!(
                "  {:>3}. {:<24} {:>5} points  Buchholz {:>5}\n",
                s.place,
                printable(&s.player),
                s.score,
                s.buchholz
            ));
        }
        if t.standings.is_empty() {
            text.push_str("  no standings yet\n");
        }
        Ok(say(text.trim_end())?)
    }

    /// Prints the player's rating.
    async fn rating(&mut self) -> anyhow::Result<()> {
        let request = Request::GetMyRating(pb::GetMyRatingRequest {});
        match self
            .connection
            .ask::<pb::GetMyRatingResponse>(request)
            .await
        {
            Ok(answer) => {
                let r = answer.rating.unwrap_or_default();
                say(&format!(
                    "rating: {:.0} (deviation {:.0}, volatility {:.3}; {} rated game{})",
                    r.rating,
                    r.deviation,
                    r.volatility,
                    r.games,
                    if r.games == 1 { "" } else { "s" }
                ))?;
            }
            Err(status) => say(&format!(
                "error: cannot read your rating: {}",
                explain(&status)
            ))?,
        }
        Ok(())
    }

    /// Starts a game against the computer.
    async fn computer(
        &mut self,
        rules: &str,
        north: bool,
        level: Option<hidden_front_bot::Level>,
        time_control: &str,
    ) -> anyhow::Result<Option<(String, bool)>> {
        let request = pb::PlayerServicePlayComputerRequest {
            time_control: time_control.to_string(),
            level: level.map(|l| l.name().to_owned()).unwrap_or_default(),
            request_id: uuid::Uuid::new_v4().to_string(),
            rules: rules.to_string(),
            seat: if north {
                pb::Side::North as i32
            } else {
                pb::Side::South as i32
            },
        };
        let request = Request::PlayComputer(request);
        match (self.connection)
            .ask::<pb::PlayerServicePlayComputerResponse>(request)
            .await
        {
            Ok(answer) => {
                say(&format!(
                    "a game against the computer: {} ({rules}, level {}, {time_control} time control), you play {}",
                    printable(&answer.game_id),
                    printable(&answer.level),
                    side_name(answer.seat())
                ))?;
                Ok(Some((answer.game_id, false)))
            }
            Err(status) => {
                say(&format!(
                    "error: cannot start a game against the computer: {}",
                    explain(&status)
                ))?;
                Ok(None)
            }
        }
    }

    /// Accepts an invite by its code or link.
    async fn accept(&mut self, code: &str) -> anyhow::Result<Option<(String, bool)>> {
        let request = pb::PlayerServiceAcceptInviteRequest {
            code: code.to_string(),
        };
        let request = Request::AcceptInvite(request);
        match (self.connection)
            .ask::<pb::PlayerServiceAcceptInviteResponse>(request)
            .await
        {
            Ok(answer) => {
                say(&format!(
                    "invite accepted: game {}, you play {} against {}",
                    printable(&answer.game_id),
                    side_name(answer.seat()),
                    printable(&answer.opponent)
                ))?;
                Ok(Some((answer.game_id, false)))
            }
            Err(status) => {
                say(&format!(
                    "error: cannot accept the invite: {}",
                    explain(&status)
                ))?;
                Ok(None)
            }
        }
    }

    /// Opens one of the player's games: the one named, or the only one in progress.
    async fn open(&mut self, game: Option<String>) -> anyhow::Result<Option<(String, bool)>> {
        if let Some(game) = game {
            return Ok(Some((game, false)));
        }
        let Some(games) = self.games_in_progress().await? else {
            return Ok(None);
        };
        match games.as_slice() {
            [] => {
                say("you have no game in progress")?;
                Ok(None)
            }
            [one] => Ok(Some((one.game_id.clone(), false))),
            many => {
                let mut text = format!("you are in {} games; `open` one of them:\n", many.len());
                for game in many {
                    text.push_str(&summary_line(game));
                }
                say(&text)?;
                Ok(None)
            }
        }
    }

    /// Queues for a match and waits for it, showing the wait; `cancel` leaves the queue.
    async fn find_match(
        &mut self,
        rules: &str,
        time_control: &str,
        rated: bool,
        lines: &mut mpsc::Receiver<String>,
    ) -> anyhow::Result<Waited> {
        let ticket_id = uuid::Uuid::new_v4().to_string();
        let queue = pb::Queue {
            rules: rules.to_string(),
            time_control: time_control.to_string(),
            rated,
        };
        let request = pb::FindMatchRequest {
            ticket_id: ticket_id.clone(),
            queue: Some(queue),
            ttl_seconds: 0,
        };
        let request = Request::FindMatch(request);
        let ticket = match self.connection.ask::<pb::FindMatchResponse>(request).await {
            Ok(answer) => answer.ticket.unwrap_or_default(),
            Err(status) => {
                say(&format!(
                    "error: cannot join the queue: {}",
                    explain(&status)
                ))?;
                return Ok(Waited::Lobby);
            }
        };
        let kind = if rated { "rated" } else { "casual" };
        let expires = if ticket.expires_at_unix_ms > 0 {
            format!(
                "; the ticket lapses in {}",
                lapses_in(ticket.expires_at_unix_ms)
            )
        } else {
            String::new()
        };
        say(&format!(
            "in the queue: {rules}, {time_control}, {kind}{expires}. waiting for an opponent (type `cancel` to leave the queue)"
        ))?;
        if !ticket.game_id.is_empty() {
            say(&format!("match found: game {}", printable(&ticket.game_id)))?;
            return Ok(Waited::Game(ticket.game_id));
        }
        let wanted = Wanted::Ticket(ticket_id.clone());
        self.wait(&wanted, "an opponent", lines).await
    }

    /// Creates an invite, prints its link and code, and waits for the friend; `cancel`
    /// withdraws it.
    async fn invite(
        &mut self,
        rules: &str,
        time_control: &str,
        lines: &mut mpsc::Receiver<String>,
    ) -> anyhow::Result<Waited> {
        let request = pb::PlayerServiceCreateInviteRequest {
            invite_id: uuid::Uuid::new_v4().to_string(),
            rules: rules.to_string(),
            time_control: time_control.to_string(),
        };
        let request = Request::CreateInvite(request);
        let invite = match (self.connection)
            .ask::<pb::PlayerServiceCreateInviteResponse>(request)
            .await
        {
            Ok(answer) => answer.invite.unwrap_or_default(),
            Err(status) => {
                say(&format!(
                    "error: cannot create an invite: {}",
                    explain(&status)
                ))?;
                return Ok(Waited::Lobby);
            }
        };
        let expires = if invite.expires_at_unix_ms > 0 {
            format!(" (it lapses in {})", lapses_in(invite.expires_at_unix_ms))
        } else {
            String::new()
        };
        say(&format!(
            "invite created: {rules}, {time_control}{expires}\n  code: {}\n  link: {}\nsend your friend the link or the code (they type `accept {}`); waiting for them (type `cancel` to withdraw the invite)",
            printable(&invite.code),
            printable(&invite.link),
            printable(&invite.code)
        ))?;
        self.wait(&Wanted::Invite(invite.code), "your friend", lines)
            .await
    }

    /// Waits for the match or the accepted invite on the lobby's follow, telling the wait every
    /// [`WAIT_TICK`], until it comes, lapses, or the player cancels. The follow stops with the
    /// wait.
    async fn wait(
        &mut self,
        wanted: &Wanted,
        whom: &str,
        lines: &mut mpsc::Receiver<String>,
    ) -> anyhow::Result<Waited> {
        let mut follow = self.connection.follow_lobby(0);
        let started = Instant::now();
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + WAIT_TICK, WAIT_TICK);
        let waited = loop {
            tokio::select! {
                _ = tick.tick() => {
                    say(&format!(
                        "waiting for {whom}: {} s (type `cancel` to stop)",
                        started.elapsed().as_secs()
                    ))?;
                }
                item = follow.recv() => match item {
                    None => {
                        say("the lobby stream stopped; back in the lobby")?;
                        break Waited::Lobby;
                    }
                    Some(Feed::Lost(why)) => say(&format!(
                        "connection lost: {why}; reconnecting (every few seconds until it answers; the wait goes on)"
                    ))?,
                    Some(Feed::Restored(_)) => say("connection restored: following the lobby again")?,
                    Some(Feed::Fatal(message)) => {
                        say(&format!("error: the lobby stream failed: {message}"))?;
                        self.cancel(wanted).await?;
                        break Waited::Lobby;
                    }
                    Some(Feed::Lobby(event)) => {
                        if let Some(done) = wanted.judge(&event, started)? {
                            break done;
                        }
                        if let Some(line) = wanted.pairing_notice(&event) {
                            say(&line)?;
                        }
                        if let Some(game) = self.organised_game_to_open(wanted, &event).await? {
                            break Waited::Game(game);
                        }
                    }
                    Some(Feed::Event(_) | Feed::Status(_)) => {}
                },
                line = lines.recv() => match line.as_deref().map(commands::parse_lobby) {
                    None | Some(Ok(LobbyInput::Quit)) => {
                        self.cancel(wanted).await?;
                        break Waited::Quit;
                    }
                    Some(Ok(LobbyInput::Cancel)) => {
                        self.cancel(wanted).await?;
                        break Waited::Lobby;
                    }
                    Some(Ok(LobbyInput::Nothing)) => {}
                    Some(_) => say(&format!(
                        "still waiting for {whom} ({} s): `cancel` first",
                        started.elapsed().as_secs()
                    ))?,
                },
            }
        };
        drop(follow);
        Ok(waited)
    }

    /// The game of an organiser's pairing that `event` announces, when the player waits for one
    /// and it is still being played (the follow replays the player's older events too, whose
    /// games have ended).
    async fn organised_game_to_open(
        &mut self,
        wanted: &Wanted,
        event: &pb::LobbyEvent,
    ) -> anyhow::Result<Option<String>> {
        let (Wanted::Organised, Some(pb::lobby_event::Kind::MatchFound(found))) =
            (wanted, &event.kind)
        else {
            return Ok(None);
        };
        if found.bulk_id.is_empty() {
            return Ok(None);
        }
        let Some(active) = self.games_in_progress().await? else {
            return Ok(None);
        };
        if !active.iter().any(|g| g.game_id == found.game_id) {
            return Ok(None);
        }
        say(&format!(
            "{} starts: game {}, you play {} against {}",
            printable(&found.bulk_id),
            printable(&found.game_id),
            side_name(found.seat()),
            printable(&found.opponent)
        ))?;
        Ok(Some(found.game_id.clone()))
    }

    /// Takes the ticket out of its queue or withdraws the invite.
    async fn cancel(&mut self, wanted: &Wanted) -> anyhow::Result<()> {
        let answer = match wanted {
            Wanted::Organised => {
                say("stopped waiting for an organised game")?;
                return Ok(());
            }
            Wanted::Ticket(ticket_id) => {
                let request = Request::CancelMatch(pb::CancelMatchRequest {
                    ticket_id: ticket_id.clone(),
                });
                (self.connection)
                    .ask::<pb::CancelMatchResponse>(request)
                    .await
                    .map(|_| "left the queue")
            }
            Wanted::Invite(code) => {
                let request = Request::CancelInvite(pb::PlayerServiceCancelInviteRequest {
                    code: code.clone(),
                });
                (self.connection)
                    .ask::<pb::PlayerServiceCancelInviteResponse>(request)
                    .await
                    .map(|_| "the invite is withdrawn")
            }
        };
        match answer {
            Ok(done) => say(done)?,
            Err(status) => say(&format!("error: cannot cancel: {}", explain(&status)))?,
        }
        Ok(())
    }
}

/// What a wait is for.
enum Wanted {
    /// A match for this ticket.
    Ticket(String),
    /// The acceptance of this invite.
    Invite(String),
    /// The next game an organiser pairs for the player (a bulk's, a tournament round's).
    Organised,
}

impl Wanted {
    /// What a wait for an organised game tells of a tournament's round just paired for the
    /// player: the opponent and when the game starts, or the bye. Only for a round still to start
    /// (or started less than [`PAIRING_NOTICE_AFTER_START_MS`] ago): the follow replays the
    /// player's older events too, whose rounds are history.
    fn pairing_notice(&self, event: &pb::LobbyEvent) -> Option<String> {
        let (Wanted::Organised, Some(pb::lobby_event::Kind::TournamentStandings(update))) =
            (self, &event.kind)
        else {
            return None;
        };
        let next = update.next.as_ref()?;
        let now = super::clock::server_now_unix_millis();
        if next
            .starts_at_unix_ms
            .saturating_add(PAIRING_NOTICE_AFTER_START_MS)
            < now
        {
            return None;
        }
        let tournament = printable(&update.tournament_id);
        let place = update.you.as_ref().map_or(String::new(), |you| {
            format!(
                "; you stand at place {} with {} points",
                you.place, you.score
            )
        });
        Some(if next.bye {
            format!(
                "{tournament}: round {} is paired and you have the bye (a point){place}; still waiting for your next game",
                next.round
            )
        } else {
            format!(
                "{tournament}: round {} is paired: you play {} against {}, starting in {}{place}",
                next.round,
                side_name(next.seat()),
                printable(&next.opponent),
                lapses_in(next.starts_at_unix_ms)
            )
        })
    }

    /// Whether `event` ends the wait, and how (telling the player).
    fn judge(&self, event: &pb::LobbyEvent, started: Instant) -> anyhow::Result<Option<Waited>> {
        use pb::lobby_event::Kind;
        let after = started.elapsed().as_secs();
        Ok(match (&event.kind, self) {
            (Some(Kind::MatchFound(found)), Wanted::Ticket(id)) if &found.ticket_id == id => {
                say(&format!(
                    "match found after {after} s: game {}, you play {} against {}",
                    printable(&found.game_id),
                    side_name(found.seat()),
                    printable(&found.opponent)
                ))?;
                Some(Waited::Game(found.game_id.clone()))
            }
            (Some(Kind::MatchFound(found)), Wanted::Invite(code))
                if found.invite_code.eq_ignore_ascii_case(code) =>
            {
                say(&format!(
                    "{} accepted your invite after {after} s: game {}, you play {}",
                    printable(&found.opponent),
                    printable(&found.game_id),
                    side_name(found.seat())
                ))?;
                Some(Waited::Game(found.game_id.clone()))
            }
            (Some(Kind::TicketExpired(expired)), Wanted::Ticket(id))
                if &expired.ticket_id == id =>
            {
                say(&format!(
                    "no opponent was found in {after} s and the ticket lapsed; back in the lobby"
                ))?;
                Some(Waited::Lobby)
            }
            (Some(Kind::InviteExpired(expired)), Wanted::Invite(code))
                if expired.code.eq_ignore_ascii_case(code) =>
            {
                say("nobody accepted the invite in time and it lapsed; back in the lobby")?;
                Some(Waited::Lobby)
            }
            _ => None,
        })
    }
}

/// How long after a round's start its pairing is still news to a wait for an organised game.
const PAIRING_NOTICE_AFTER_START_MS: u64 = 60_000;

/// One tournament as `tournaments` lists it: id, format, players, state, whether it takes players.
fn tournament_line(t: &pb::Tournament) -> String {
    let format = match t.format() {
        pb::TournamentFormat::Swiss => "Swiss",
        pb::TournamentFormat::RoundRobin => "round robin",
        pb::TournamentFormat::Arena => "arena",
        pb::TournamentFormat::Unspecified => "?",
    };
    let state = match t.state() {
        pb::TournamentState::Scheduled => format!("starts in {}", lapses_in(t.start_at_unix_ms)),
        pb::TournamentState::Running => format!("round {} of {}", t.rounds.len(), t.round_count),
        pb::TournamentState::Finished => "finished".to_string(),
        pb::TournamentState::Unspecified => "?".to_string(),
    };
    let open = if t.open_to_players && t.state() == pb::TournamentState::Scheduled {
        ", open to players"
    } else {
        ""
    };
    format!(
        "  {}  {format}, {} players, {state}{open}\n",
        printable(&t.tournament_id),
        t.entrants.len()
    )
}

/// The time left until `deadline_ms` in words a person reads at a glance: seconds, minutes or
/// hours.
fn lapses_in(deadline_ms: u64) -> String {
    let seconds = super::clock::seconds_left(deadline_ms, super::clock::server_now_unix_millis());
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds.div_ceil(60)),
        _ => format!("{} h", seconds.div_ceil(3600)),
    }
}

/// One line of a game list.
fn summary_line(game: &pb::GameSummary) -> String {
    let state = match game.phase() {
        pb::Phase::Deployment => "deployment".to_string(),
        pb::Phase::Play => "in play".to_string(),
        pb::Phase::Ended => format!(
            "ended: {}",
            super::board::describe_outcome(game.outcome.as_ref(), Some(game.seat()))
        ),
        pb::Phase::Unspecified => "?".to_string(),
    };
    format!(
        "  {}  {}  {} against {}  {state}\n",
        printable(&game.game_id),
        printable(&game.rules),
        side_name(game.seat()),
        if game.opponent.is_empty() {
            "(nobody yet)".to_string()
        } else {
            printable(&game.opponent)
        }
    )
}
