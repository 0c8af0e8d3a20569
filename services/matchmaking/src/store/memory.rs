//! [`MatchStore`] in memory: the one-box mode and unit tests. One state behind a
//! `parking_lot::Mutex` (no poisoning: the project's lock policy), the same contract as Postgres
//! (the conformance suite runs on both). Nothing survives the process.

use super::*;
use hidden_front_lifecycle::FactSink;
use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::broadcast;

#[derive(Default)]
struct State {
    /// By (player, ticket id).
    tickets: HashMap<(String, String), Ticket>,
    matches: HashMap<Uuid, Match>,
    invites: HashMap<String, Invite>,
    ratings: HashMap<String, (Rating, u32)>,
    /// Ended games handled, with when.
    ended: HashMap<Uuid, u64>,
    /// How the handled games matchmaking made ended.
    outcomes: HashMap<Uuid, GameOutcome>,
    /// Organisers' bulks without their games (those are in `matches`), with their match ids in
    /// order.
    bulks: HashMap<String, (Bulk, Vec<Uuid>)>,
    tournaments: HashMap<String, Tournament>,
    feed: u64,
    lobby: Vec<LobbyEvent>,
    computer: HashMap<Uuid, (ComputerGame, Option<String>, u64, bool)>,
}

/// Matchmaking state in this process's memory.
pub struct MemoryMatchStore {
    state: Mutex<State>,
    wakeups: broadcast::Sender<String>,
    /// Where the lifecycle facts of settled games go (the game store's outbox in a one-box
    /// process); `None` drops them (unit tests).
    facts: Option<Arc<dyn FactSink>>,
}

impl Default for MemoryMatchStore {
    fn default() -> Self {
        MemoryMatchStore::new()
    }
}

impl MemoryMatchStore {
    /// An empty store.
    pub fn new() -> MemoryMatchStore {
        MemoryMatchStore {
            state: Mutex::new(State::default()),
            wakeups: broadcast::channel(1024).0,
            facts: None,
        }
    }

    /// An empty store that records settled games' lifecycle facts in `facts`.
    pub fn with_fact_sink(facts: Arc<dyn FactSink>) -> MemoryMatchStore {
        MemoryMatchStore {
            facts: Some(facts),
            ..MemoryMatchStore::new()
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Writes a tournament step's notices under `state`'s lock (so they follow the steps in the
    /// order they were made), then wakes the players' streams.
    fn write_notices(&self, mut state: MutexGuard<'_, State>, notices: Notices) {
        if let Some(sink) = &self.facts {
            sink.record(&notices.facts);
        }
        let players: Vec<String> = notices.events.iter().map(|(p, _)| p.clone()).collect();
        for (player, kind) in notices.events {
            state.push_event(player, kind);
        }
        drop(state);
        for player in players {
            let _ = self.wakeups.send(player);
        }
    }
}

impl State {
    /// The game of a match, once it has one (what Postgres joins in from `mm_matches`).
    fn game_of(&self, match_id: Option<Uuid>) -> Option<Uuid> {
        match_id
            .and_then(|m| self.matches.get(&m))
            .and_then(|m| m.game_id)
    }

    fn with_game(&self, mut ticket: Ticket) -> Ticket {
        ticket.game_id = self.game_of(ticket.match_id);
        ticket
    }

    fn invite_with_game(&self, mut invite: Invite) -> Invite {
        invite.game_id = self.game_of(invite.match_id);
        invite
    }

    fn push_event(&mut self, player: String, kind: LobbyEventKind) {
        let seq = self.lobby.last().map_or(1, |e| e.seq + 1);
        self.lobby.push(LobbyEvent { seq, player, kind });
    }

    fn rating_of(&self, player: &str) -> (Rating, u32) {
        self.ratings
            .get(player)
            .copied()
            .unwrap_or((Rating::default(), 0))
    }

    /// Rated matches between `m`'s two players (either seat), other than `game_id`'s, whose
    /// game's end was handled at or after `since_ms`.
    fn rated_between(&self, m: &Match, game_id: Uuid, since_ms: u64) -> u32 {
        let pair = |a: &str, b: &str| {
            (a == m.south_player && b == m.north_player)
                || (a == m.north_player && b == m.south_player)
        };
        let count = self
            .matches
            .values()
            .filter(|other| other.rated && pair(&other.south_player, &other.north_player))
            .filter_map(|other| other.game_id)
            .filter(|game| *game != game_id)
            .filter(|game| self.ended.get(game).is_some_and(|at| *at >= since_ms))
            .count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Writes an end-of-game plan as it is (the caller holds the lock: all of it or nothing).
    fn persist(&mut self, plan: &EndOfGamePlan) {
        for change in plan.ratings.iter().flatten() {
            self.ratings
                .insert(change.player.clone(), (change.rating, change.games));
        }
        for ticket in &plan.requeue {
            // A ticket the player queued meanwhile in the same queue gives way to this one.
            for other in self.tickets.values_mut() {
                if other.player == ticket.player
                    && other.queue == ticket.queue
                    && other.state == TicketState::Waiting
                {
                    other.state = TicketState::Cancelled;
                }
            }
            self.tickets.insert(
                (ticket.player.clone(), ticket.ticket_id.clone()),
                ticket.clone(),
            );
        }
        for (player, kind) in &plan.events {
            self.push_event(player.clone(), kind.clone());
        }
    }

    /// A stored bulk with its games as they are now.
    fn bulk(&self, bulk_id: &str) -> Option<Bulk> {
        let (head, match_ids) = self.bulks.get(bulk_id)?;
        let mut bulk = head.clone();
        bulk.games = match_ids
            .iter()
            .filter_map(|id| self.matches.get(id))
            .map(|m| BulkGame {
                the_match: m.clone(),
                outcome: m.game_id.and_then(|g| self.outcomes.get(&g).copied()),
            })
            .collect();
        Some(bulk)
    }
}

#[async_trait]
impl MatchStore for MemoryMatchStore {
    async fn enqueue(&self, ticket: Ticket) -> Result<Ticket, MatchError> {
        let mut state = self.lock();
        let key = (ticket.player.clone(), ticket.ticket_id.clone());
        if let Some(existing) = state.tickets.get(&key) {
            return Ok(state.with_game(existing.clone()));
        }
        if let Some(other) = state.tickets.values().find(|t| {
            t.player == ticket.player && t.queue == ticket.queue && t.state == TicketState::Waiting
        }) {
            return Err(already_queued(&ticket, &other.ticket_id));
        }
        state.tickets.insert(key, ticket.clone());
        Ok(ticket)
    }

    async fn ticket(&self, player: &str, ticket_id: &str) -> Result<Option<Ticket>, MatchError> {
        let state = self.lock();
        Ok(state
            .tickets
            .get(&(player.to_owned(), ticket_id.to_owned()))
            .cloned()
            .map(|t| state.with_game(t)))
    }

    async fn cancel_ticket(&self, player: &str, ticket_id: &str) -> Result<Ticket, MatchError> {
        let mut state = self.lock();
        let ticket = state
            .tickets
            .get_mut(&(player.to_owned(), ticket_id.to_owned()))
            .ok_or_else(|| not_found_ticket(player, ticket_id))?;
        match ticket.state {
            TicketState::Waiting => ticket.state = TicketState::Cancelled,
            TicketState::Cancelled => {}
            other => return Err(cannot_cancel(ticket_id, other)),
        }
        let ticket = ticket.clone();
        Ok(state.with_game(ticket))
    }

    async fn expire(&self, now_ms: u64) -> Result<(Vec<Ticket>, Vec<Invite>), MatchError> {
        let mut state = self.lock();
        let mut tickets = Vec::new();
        for ticket in state.tickets.values_mut() {
            if ticket.state == TicketState::Waiting && ticket.expires_ms <= now_ms {
                ticket.state = TicketState::Expired;
                tickets.push(ticket.clone());
            }
        }
        let mut invites = Vec::new();
        for invite in state.invites.values_mut() {
            if invite.state == InviteState::Open && invite.expires_ms <= now_ms {
                invite.state = InviteState::Expired;
                invites.push(invite.clone());
            }
        }
        for t in &tickets {
            state.push_event(
                t.player.clone(),
                LobbyEventKind::TicketExpired {
                    ticket_id: t.ticket_id.clone(),
                },
            );
        }
        for i in &invites {
            state.push_event(
                i.player.clone(),
                LobbyEventKind::InviteExpired {
                    code: i.code.clone(),
                },
            );
        }
        drop(state);
        for player in tickets
            .iter()
            .map(|t| &t.player)
            .chain(invites.iter().map(|i| &i.player))
        {
            let _ = self.wakeups.send(player.clone());
        }
        Ok((tickets, invites))
    }

    async fn waiting_queues(&self) -> Result<Vec<Queue>, MatchError> {
        let state = self.lock();
        let mut queues: Vec<Queue> = state
            .tickets
            .values()
            .filter(|t| t.state == TicketState::Waiting)
            .map(|t| t.queue.clone())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        queues.sort_by_key(Queue::key);
        Ok(queues)
    }

    async fn waiting_counts(&self) -> Result<(u64, u64), MatchError> {
        let state = self.lock();
        let waiting = state
            .tickets
            .values()
            .filter(|t| t.state == TicketState::Waiting);
        let (rated, casual) = waiting.fold((0, 0), |(r, c), t| {
            if t.queue.rated {
                (r + 1, c)
            } else {
                (r, c + 1)
            }
        });
        Ok((rated, casual))
    }

    async fn pair(
        &self,
        queue: &Queue,
        now_ms: u64,
        pairer: Pairer<'_>,
    ) -> Result<Vec<(Match, Ticket, Ticket)>, MatchError> {
        let mut state = self.lock();
        let mut waiting: Vec<Ticket> = state
            .tickets
            .values()
            .filter(|t| {
                t.state == TicketState::Waiting && &t.queue == queue && t.expires_ms > now_ms
            })
            .cloned()
            .collect();
        waiting.sort_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then(a.enqueued_ms.cmp(&b.enqueued_ms))
                .then(a.player.cmp(&b.player))
        });
        let pairs = checked_pairs(&waiting, pairer(&waiting));
        let mut made = Vec::new();
        for (a, b) in pairs {
            let (south, north) = (waiting[a].clone(), waiting[b].clone());
            let m = Match::of_pair(queue, &south, &north, now_ms);
            let mut stored = Vec::new();
            for t in [&south, &north] {
                let entry = state
                    .tickets
                    .get_mut(&(t.player.clone(), t.ticket_id.clone()))
                    .expect("a listed ticket exists");
                entry.state = TicketState::Matched;
                entry.match_id = Some(m.match_id);
                stored.push(entry.clone());
            }
            state.matches.insert(m.match_id, m.clone());
            let north = stored.pop().expect("two tickets");
            let south = stored.pop().expect("two tickets");
            made.push((m, south, north));
        }
        Ok(made)
    }

    async fn pending_matches(&self, before_ms: u64) -> Result<Vec<Match>, MatchError> {
        let state = self.lock();
        Ok(state
            .matches
            .values()
            .filter(|m| m.game_id.is_none() && m.bulk_id.is_none() && m.created_ms < before_ms)
            .cloned()
            .collect())
    }

    async fn complete_match(
        &self,
        match_id: Uuid,
        game_id: Uuid,
        _now_ms: u64,
    ) -> Result<Match, MatchError> {
        let mut state = self.lock();
        let m = state.matches.get_mut(&match_id).ok_or_else(|| {
            MatchError::NotFound(
                Reason::MatchNotFound,
                format!("match {match_id} does not exist"),
            )
        })?;
        match m.game_id {
            Some(existing) if existing == game_id => return Ok(m.clone()),
            Some(existing) => {
                return Err(MatchError::FailedPrecondition(
                    Reason::MatchClosed,
                    format!("match {match_id} already has game {existing}, not {game_id}"),
                ));
            }
            None => m.game_id = Some(game_id),
        }
        let m = m.clone();
        let events = match_found_events(&m, game_id);
        for (player, kind) in events.clone() {
            state.push_event(player, kind);
        }
        drop(state);
        for (player, _) in events {
            let _ = self.wakeups.send(player);
        }
        Ok(m)
    }

    async fn create_invite(&self, invite: Invite) -> Result<Invite, MatchError> {
        let mut state = self.lock();
        if let Some(existing) = state
            .invites
            .values()
            .find(|i| i.player == invite.player && i.invite_id == invite.invite_id)
        {
            return Ok(state.invite_with_game(existing.clone()));
        }
        if state.invites.contains_key(&invite.code) {
            return Err(MatchError::AlreadyExists(
                Reason::MatchExists,
                format!("invite code {} is taken", invite.code),
            ));
        }
        state.invites.insert(invite.code.clone(), invite.clone());
        Ok(invite)
    }

    async fn invite(&self, code: &str) -> Result<Option<Invite>, MatchError> {
        let state = self.lock();
        Ok(state
            .invites
            .get(code)
            .cloned()
            .map(|i| state.invite_with_game(i)))
    }

    async fn accept_invite(
        &self,
        code: &str,
        player: &str,
        now_ms: u64,
    ) -> Result<Match, MatchError> {
        let mut state = self.lock();
        let invite = state
            .invites
            .get(code)
            .cloned()
            .ok_or_else(|| not_found_invite(code))?;
        check_acceptable(&invite, player, now_ms)?;
        if let (InviteState::Accepted, Some(match_id)) = (invite.state, invite.match_id) {
            return state
                .matches
                .get(&match_id)
                .cloned()
                .ok_or_else(|| MatchError::Corrupt(format!("invite {code}: match missing")));
        }
        let m = invite_match(&invite, player, now_ms);
        state.matches.insert(m.match_id, m.clone());
        let stored = state.invites.get_mut(code).expect("found above");
        stored.state = InviteState::Accepted;
        stored.match_id = Some(m.match_id);
        stored.accepted_by = Some(player.to_owned());
        Ok(m)
    }

    async fn cancel_invite(&self, player: &str, code: &str) -> Result<Invite, MatchError> {
        let mut state = self.lock();
        let invite = state
            .invites
            .get_mut(code)
            .filter(|i| i.player == player)
            .ok_or_else(|| not_found_invite(code))?;
        match invite.state {
            InviteState::Open => invite.state = InviteState::Cancelled,
            InviteState::Cancelled => {}
            other => return Err(cannot_cancel_invite(code, other)),
        }
        let invite = invite.clone();
        Ok(state.invite_with_game(invite))
    }

    async fn rating(&self, player: &str) -> Result<(Rating, u32), MatchError> {
        Ok(self.lock().rating_of(player))
    }

    async fn apply_ended_game(
        &self,
        game_id: Uuid,
        now_ms: u64,
        pair_since_ms: u64,
        decide: EndPolicy<'_>,
    ) -> Result<Option<EndOfGamePlan>, MatchError> {
        let mut state = self.lock();
        if state.ended.contains_key(&game_id) {
            return Ok(None);
        }
        state.ended.insert(game_id, now_ms);
        let held = state
            .matches
            .values()
            .find(|m| m.game_id == Some(game_id))
            .map(|m| HeldMatch {
                the_match: m.clone(),
                south_rating: state.rating_of(&m.south_player),
                north_rating: state.rating_of(&m.north_player),
                rated_between_recently: state.rated_between(m, game_id, pair_since_ms),
            });
        let plan = decide(held.as_ref());
        state.persist(&plan);
        if let Some(outcome) = plan.outcome {
            state.outcomes.insert(game_id, outcome);
        }
        if let Some(sink) = &self.facts {
            let facts = plan.new_facts(game_id);
            // Under the lock, so the facts follow the plan in the order plans are persisted.
            sink.record(&facts);
        }
        drop(state);
        for (player, _) in &plan.events {
            let _ = self.wakeups.send(player.clone());
        }
        Ok(Some(plan))
    }

    async fn feed_cursor(&self) -> Result<u64, MatchError> {
        Ok(self.lock().feed)
    }

    async fn advance_feed(&self, cursor: u64) -> Result<(), MatchError> {
        let mut state = self.lock();
        state.feed = state.feed.max(cursor);
        Ok(())
    }

    async fn lobby_events(
        &self,
        player: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LobbyEvent>, MatchError> {
        Ok(self
            .lock()
            .lobby
            .iter()
            .filter(|e| e.seq > after_seq && e.player == player)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn lobby_wakeups(&self) -> Result<broadcast::Receiver<String>, MatchError> {
        Ok(self.wakeups.subscribe())
    }

    async fn add_computer_game(&self, game: ComputerGame) -> Result<ComputerGame, MatchError> {
        let mut state = self.lock();
        if let Some((existing, ..)) = state
            .computer
            .values()
            .find(|(g, ..)| g.player == game.player && g.request_id == game.request_id)
        {
            return Ok(existing.clone());
        }
        state
            .computer
            .entry(game.game_id)
            .or_insert((game.clone(), None, 0, false));
        Ok(game)
    }

    async fn computer_game(
        &self,
        player: &str,
        request_id: &str,
    ) -> Result<Option<ComputerGame>, MatchError> {
        Ok(self
            .lock()
            .computer
            .values()
            .find(|(g, ..)| g.player == player && g.request_id == request_id)
            .map(|(g, ..)| g.clone()))
    }

    async fn claim_computer_game(
        &self,
        owner: &str,
        now_ms: u64,
        lease_until_ms: u64,
    ) -> Result<Option<ComputerGame>, MatchError> {
        let mut state = self.lock();
        let claimable = state
            .computer
            .values_mut()
            .filter(|(_, _, until, finished)| !finished && *until <= now_ms)
            .min_by_key(|(g, ..)| g.game_id);
        Ok(claimable.map(|(game, holder, until, _)| {
            *holder = Some(owner.to_owned());
            *until = lease_until_ms;
            game.clone()
        }))
    }

    async fn renew_computer_lease(
        &self,
        game_id: Uuid,
        owner: &str,
        lease_until_ms: u64,
    ) -> Result<bool, MatchError> {
        let mut state = self.lock();
        match state.computer.get_mut(&game_id) {
            Some((_, Some(holder), until, false)) if holder == owner => {
                *until = lease_until_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn finish_computer_game(&self, game_id: Uuid) -> Result<(), MatchError> {
        if let Some(entry) = self.lock().computer.get_mut(&game_id) {
            entry.3 = true;
        }
        Ok(())
    }

    async fn create_bulk_noting(&self, new: NewBulk, notices: Notices) -> Result<Bulk, MatchError> {
        let mut state = self.lock();
        if let Some(stored) = state.bulk(&new.bulk_id) {
            return if new.is_retry_of(&stored) {
                Ok(stored)
            } else {
                Err(new.conflict())
            };
        }
        let bulk = Bulk::of_new(&new);
        let mut head = bulk.clone();
        head.games.clear();
        let match_ids = bulk.games.iter().map(|g| g.the_match.match_id).collect();
        for game in &bulk.games {
            state
                .matches
                .insert(game.the_match.match_id, game.the_match.clone());
        }
        state.bulks.insert(new.bulk_id.clone(), (head, match_ids));
        self.write_notices(state, notices);
        Ok(bulk)
    }

    async fn bulk(&self, bulk_id: &str) -> Result<Option<Bulk>, MatchError> {
        Ok(self.lock().bulk(bulk_id))
    }

    async fn bulks(&self, bulk_ids: &[String]) -> Result<Vec<Bulk>, MatchError> {
        let state = self.lock();
        Ok(bulk_ids.iter().filter_map(|id| state.bulk(id)).collect())
    }

    async fn cancel_bulk(
        &self,
        bulk_id: &str,
        now_ms: u64,
        margin_ms: u64,
    ) -> Result<Bulk, MatchError> {
        let mut state = self.lock();
        let mut bulk = state
            .bulk(bulk_id)
            .ok_or_else(|| Bulk::not_found(bulk_id))?;
        bulk.check_cancellable(now_ms, margin_ms)?;
        if bulk.cancelled_ms.is_none() {
            bulk.cancelled_ms = Some(now_ms);
            if let Some((head, _)) = state.bulks.get_mut(bulk_id) {
                head.cancelled_ms = Some(now_ms);
            }
        }
        Ok(bulk)
    }

    async fn create_tournament_noting(
        &self,
        tournament: Tournament,
        notices: Notices,
    ) -> Result<Tournament, MatchError> {
        let mut state = self.lock();
        if let Some(stored) = state.tournaments.get(&tournament.tournament_id) {
            return if tournament.is_retry_of(stored) {
                Ok(stored.clone())
            } else {
                Err(tournament.conflict())
            };
        }
        state
            .tournaments
            .insert(tournament.tournament_id.clone(), tournament.clone());
        self.write_notices(state, notices);
        Ok(tournament)
    }

    async fn tournament(&self, tournament_id: &str) -> Result<Option<Tournament>, MatchError> {
        Ok(self.lock().tournaments.get(tournament_id).cloned())
    }

    async fn running_tournaments(&self, limit: usize) -> Result<Vec<Tournament>, MatchError> {
        let state = self.lock();
        let mut running: Vec<Tournament> = state
            .tournaments
            .values()
            .filter(|t| t.finished_ms.is_none())
            .cloned()
            .collect();
        running.sort_by(|a, b| {
            (a.created_ms, &a.tournament_id).cmp(&(b.created_ms, &b.tournament_id))
        });
        running.truncate(limit);
        Ok(running)
    }

    async fn finish_tournament(
        &self,
        tournament_id: &str,
        now_ms: u64,
        notices: Notices,
    ) -> Result<bool, MatchError> {
        let mut state = self.lock();
        let tournament = state
            .tournaments
            .get_mut(tournament_id)
            .ok_or_else(|| Tournament::not_found(tournament_id))?;
        if tournament.finished_ms.is_some() {
            return Ok(false);
        }
        tournament.finished_ms = Some(now_ms);
        self.write_notices(state, notices);
        Ok(true)
    }

    async fn change_entrants(
        &self,
        tournament_id: &str,
        change: EntrantChange<'_>,
    ) -> Result<Tournament, MatchError> {
        let mut state = self.lock();
        let stored = state
            .tournaments
            .get_mut(tournament_id)
            .ok_or_else(|| Tournament::not_found(tournament_id))?;
        let changed = change(stored.clone())?;
        stored.entrants = changed.entrants.clone();
        stored.paused = changed.paused.clone();
        Ok(changed)
    }

    async fn due_matches(&self, now_ms: u64, limit: usize) -> Result<Vec<Match>, MatchError> {
        let state = self.lock();
        let mut due: Vec<(u64, &Match)> = state
            .bulks
            .values()
            .filter(|(head, _)| head.cancelled_ms.is_none() && head.start_ms <= now_ms)
            .flat_map(|(head, ids)| {
                ids.iter()
                    .filter_map(|id| state.matches.get(id))
                    .filter(|m| m.game_id.is_none())
                    .map(|m| (head.start_ms, m))
            })
            .collect();
        due.sort_by_key(|(start, m)| (*start, m.match_id));
        Ok(due
            .into_iter()
            .take(limit)
            .map(|(_, m)| m.clone())
            .collect())
    }
}

/// The pairer's pairs, keeping only valid ones: indices in range, each ticket once, two players.
pub(crate) fn checked_pairs(waiting: &[Ticket], pairs: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut used = HashSet::new();
    let mut kept = Vec::new();
    for (a, b) in pairs {
        let valid = a < waiting.len()
            && b < waiting.len()
            && a != b
            && waiting[a].player != waiting[b].player
            && !used.contains(&a)
            && !used.contains(&b);
        if valid {
            used.insert(a);
            used.insert(b);
            kept.push((a, b));
        }
    }
    kept
}

/// The refusal of a second waiting ticket of `ticket`'s player in its queue (`other` waits).
pub(crate) fn already_queued(ticket: &Ticket, other: &str) -> MatchError {
    MatchError::AlreadyExists(
        Reason::TicketExists,
        format!(
            "player {} already waits in queue {} with ticket {other}",
            ticket.player,
            ticket.queue.key(),
        ),
    )
}

pub(crate) fn not_found_ticket(player: &str, ticket_id: &str) -> MatchError {
    MatchError::NotFound(
        Reason::TicketNotFound,
        format!("player {player} has no ticket {ticket_id:?}"),
    )
}

pub(crate) fn cannot_cancel(ticket_id: &str, state: TicketState) -> MatchError {
    MatchError::FailedPrecondition(
        Reason::TicketClosed,
        format!(
            "ticket {ticket_id:?} is {}, not waiting: it cannot be cancelled",
            state.name()
        ),
    )
}

pub(crate) fn not_found_invite(code: &str) -> MatchError {
    MatchError::NotFound(
        Reason::InviteNotFound,
        format!("no invite with code {code:?}"),
    )
}

pub(crate) fn cannot_cancel_invite(code: &str, state: InviteState) -> MatchError {
    MatchError::FailedPrecondition(
        Reason::InviteClosed,
        format!(
            "invite {code} is {}, not open: it cannot be cancelled",
            state.name()
        ),
    )
}

/// Whether `player` may accept `invite` now (an accepted invite passes for its acceptor only).
pub(crate) fn check_acceptable(
    invite: &Invite,
    player: &str,
    now_ms: u64,
) -> Result<(), MatchError> {
    if invite.player == player {
        return Err(MatchError::FailedPrecondition(
            Reason::OwnInvite,
            format!(
                "invite {} is your own: another player must accept it",
                invite.code
            ),
        ));
    }
    match invite.state {
        InviteState::Open if invite.expires_ms > now_ms => Ok(()),
        InviteState::Open | InviteState::Expired => Err(MatchError::FailedPrecondition(
            Reason::InviteClosed,
            format!("invite {} has expired", invite.code),
        )),
        InviteState::Cancelled => Err(MatchError::FailedPrecondition(
            Reason::InviteClosed,
            format!("invite {} was cancelled by its creator", invite.code),
        )),
        InviteState::Accepted if invite.accepted_by.as_deref() == Some(player) => Ok(()),
        InviteState::Accepted => Err(MatchError::FailedPrecondition(
            Reason::InviteClosed,
            format!(
                "invite {} was already accepted by another player",
                invite.code
            ),
        )),
    }
}

/// The match an accepted invite makes: the creator south, the acceptor north.
pub(crate) fn invite_match(invite: &Invite, player: &str, now_ms: u64) -> Match {
    Match {
        match_id: Uuid::now_v7(),
        kind: MatchKind::Invite,
        rules: invite.rules.clone(),
        time_control: invite.time_control.clone(),
        rated: false,
        south_player: invite.player.clone(),
        north_player: player.to_owned(),
        south_ticket: None,
        north_ticket: None,
        invite_code: Some(invite.code.clone()),
        bulk_id: None,
        created_ms: now_ms,
        game_id: None,
    }
}
