//! Lifecycle facts: what the platform's other services (accounts, ratings display, rewards,
//! anti-cheat, analytics, support) are told about games, and nothing more.
//!
//! A fact is derived from the engine's events of one append ([`derive`]) and written to the
//! outbox in the same transaction as those events, so a fact exists if and only if what it
//! reports committed. Consumers read the outbox from a cursor (its commit-ordered
//! [`Fact::position`]) or, so that one unreachable shard of a sharded store holds back only its
//! own facts, from a position per shard ([`FeedPosition`]), over the session's `WatchLifecycle`
//! stream or as webhooks, and each fact keeps the [`Fact::id`] it was written with, so a
//! redelivery is recognisable.
//!
//! **No fact carries hidden information.** Payloads name players, seats, results, reasons, ply
//! counts and times, never a piece, a kind or a square: a consumer may be told of a game in
//! progress without learning anything a player may not know.

pub mod cloudevents;
pub mod derive;
pub mod position;

pub use position::{FeedPosition, PositionError};

use hidden_front_rules::{EndReason, Side};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A fact about to be written: its id is chosen before the write, so every reader, every retry
/// and every redelivery sees the same one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewFact {
    /// The fact's id (UUID v7), stable across redeliveries.
    pub id: Uuid,
    /// The game it is about.
    pub game_id: Uuid,
    /// What happened.
    pub body: FactBody,
}

impl NewFact {
    /// A fact about `game_id` with a fresh id.
    pub fn new(game_id: Uuid, body: FactBody) -> NewFact {
        NewFact {
            id: Uuid::now_v7(),
            game_id,
            body,
        }
    }

    /// A fact about a tournament (a body whose [`FactBody::tournament_id`] is set) with a fresh
    /// id, keyed in the outbox by [`tournament_key`] of its id.
    pub fn about_tournament(body: FactBody) -> NewFact {
        let key = tournament_key(body.tournament_id().unwrap_or_default());
        NewFact::new(key, body)
    }
}

/// The namespace of [`tournament_key`]'s UUIDs (a v4 drawn once for this purpose).
const TOURNAMENT_NAMESPACE: Uuid = Uuid::from_u128(0x6b1f_4a3e_8c2d_4e59_9a7b_30c1_d5e8_f207);

/// The outbox key of a tournament's facts: the outbox keys every fact by a UUID (its `game_id`
/// column, indexed with the position), and a tournament's id is the organiser's text, so its
/// facts are keyed by this name-based UUID (v5) of it. Why not a column of their own: every
/// reader, cursor and webhook deliverer handles a tournament's facts exactly as a game's; only the
/// subject a consumer is shown differs ([`Fact::subject`]).
pub fn tournament_key(tournament_id: &str) -> Uuid {
    Uuid::new_v5(&TOURNAMENT_NAMESPACE, tournament_id.as_bytes())
}

/// A fact as the outbox holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// Its place in the outbox: increasing in commit order, so "after cursor N" is exactly what
    /// committed after the fact at N (positions may skip numbers, never go back). On a sharded
    /// store that holds per shard, and for the merged feed, which waits for every shard; a
    /// reader by [`FeedPosition`] may get a late shard's fact below one it already has.
    pub position: u64,
    /// The id it was written with.
    pub id: Uuid,
    /// The game it is about.
    pub game_id: Uuid,
    /// When it was written (the store's time of the transaction).
    pub occurred_at: SystemTime,
    /// When the game was created (the store's time), which dates the game's duration.
    pub game_created_at: SystemTime,
    /// What happened.
    pub body: FactBody,
}

/// A fact with the reader's place in the feed just after it: the position to store once the
/// fact is processed, so that a reader resuming from it gets exactly what came after.
#[derive(Debug, Clone, PartialEq)]
pub struct PositionedFact {
    /// The fact.
    pub fact: Fact,
    /// Every shard's entry as of just after this fact.
    pub after: FeedPosition,
}

impl Fact {
    /// What the fact is about, as the CloudEvents `subject` says it: `games/<game id>`, or
    /// `tournaments/<tournament id>` for a tournament's facts.
    pub fn subject(&self) -> String {
        match self.body.tournament_id() {
            Some(tournament_id) => format!("tournaments/{tournament_id}"),
            None => format!("games/{}", self.game_id),
        }
    }

    /// How long the game had lasted when this fact was written.
    pub fn game_age(&self) -> Duration {
        self.occurred_at
            .duration_since(self.game_created_at)
            .unwrap_or_default()
    }
}

/// What happened, with the data a consumer needs and nothing secret. Stored as JSON (tagged by
/// `kind`), so the outbox never needs a migration to carry a new fact kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FactBody {
    /// A game exists, under these rules and clock.
    GameCreated {
        /// The rule set's name.
        rules: String,
        /// The time control's name (`online`, `relaxed`, `custom`).
        time_control: String,
        /// The player in the south seat.
        south_player: String,
        /// The player in the north seat.
        north_player: String,
    },
    /// Both seats have players. Games are created with both seats taken, so this is written
    /// with [`FactBody::GameCreated`]; it is its own fact so consumers that care only about
    /// seating need not learn how a game is created.
    SeatsFilled {
        /// The player in the south seat.
        south_player: String,
        /// The player in the north seat.
        north_player: String,
    },
    /// Both deployments are in and the first move is due.
    PlayStarted {
        /// Who moves first.
        first_mover: Side,
    },
    /// The game is over.
    GameEnded {
        /// The winning seat, `None` for a draw or a game without a result.
        winner: Option<Side>,
        /// The winning player, `None` when nobody won.
        winner_player: Option<String>,
        /// Why it ended, by the engine's wire name ([`EndReason::name`]: `flag_captured`,
        /// `no_combat_100`, ...), the name replays and the docs use. Facts stored before the
        /// names were unified say `no_combat_limit` for `no_combat_100`; they still read.
        #[serde(with = "end_reason_name")]
        reason: EndReason,
        /// Plies played.
        plies: u32,
        /// The player in the south seat.
        south_player: String,
        /// The player in the north seat.
        north_player: String,
    },
    /// A player left during deployment without confirming; the game ends without a result.
    SeatLost {
        /// The seat.
        side: Side,
        /// The player who held it.
        player: String,
    },
    /// A rated game moved both players' ratings.
    RatingChanged {
        /// The rule set the ratings are for.
        rules: String,
        /// South's change, then north's.
        changes: Vec<RatingChange>,
    },
    /// An operator stopped the game (it also gets a [`FactBody::GameEnded`] with reason
    /// `aborted`).
    GameAborted {
        /// Who aborted it (the admin credential's name).
        operator: String,
        /// The operator's reason.
        reason: String,
    },
    /// An organiser made a tournament (`OrganiserService.CreateTournament`).
    TournamentCreated {
        /// The organiser's id for it.
        tournament_id: String,
        /// The operator who made it.
        organiser: String,
        /// `swiss`, `round_robin` or `arena`.
        format: String,
        /// The games' rule set.
        rules: String,
        /// The games' time control name.
        time_control: String,
        /// Whether its games are rated.
        rated: bool,
        /// The rounds asked for (a round robin's follow from its entrants; 0 for an arena).
        rounds: u32,
        /// An arena's duration (0 for the other formats).
        duration_ms: u64,
        /// When its first round starts (ms since the Unix epoch).
        starts_at_ms: u64,
        /// Whether players enter it themselves.
        open_to_players: bool,
        /// The entrants the organiser named (players of an open one join later).
        entrants: Vec<String>,
    },
    /// A tournament's first round (an arena's first wave) was paired: it has begun, with these
    /// entrants.
    TournamentStarted {
        /// The tournament.
        tournament_id: String,
        /// Every entrant at the start.
        entrants: Vec<String>,
    },
    /// A Swiss's or round robin's round was paired; its games start at `games_start_at_ms`.
    /// An arena's waves have no fact of their own (each of their games has its own facts).
    TournamentRoundStarted {
        /// The tournament.
        tournament_id: String,
        /// The round, from 1.
        round: u32,
        /// The rounds the tournament has in all.
        rounds: u32,
        /// The round's games, the south player first.
        pairs: Vec<TournamentPair>,
        /// The player who sits this round out with a bye's point, if any.
        bye: Option<String>,
        /// When the round's games start (ms since the Unix epoch).
        games_start_at_ms: u64,
    },
    /// A tournament's last round ended (an arena: its time ran out and its last games ended).
    TournamentFinished {
        /// The tournament.
        tournament_id: String,
        /// Rounds played (an arena: waves).
        rounds: u32,
        /// The final table, first place first.
        standings: Vec<TournamentStanding>,
    },
}

/// One game of a tournament's round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentPair {
    /// The player in the south seat.
    pub south_player: String,
    /// The player in the north seat.
    pub north_player: String,
}

/// One line of a tournament's table, as `GetTournament` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TournamentStanding {
    /// From 1.
    pub place: u32,
    /// The player.
    pub player: String,
    /// Points (a win 1, a draw 0.5, a bye 1; an arena's doubled on a streak).
    pub score: f64,
    /// The opponents' scores summed (0 in an arena).
    pub buchholz: f64,
    /// The scores of the opponents beaten plus half those drawn (0 in an arena).
    pub sonneborn_berger: f64,
    /// The rating the player entered with.
    pub rating: i32,
}

/// The end reason of a fact as its wire name, written as [`EndReason::name`] and read from
/// that name or from a name an older release stored.
///
/// Until the names were unified, facts were written with the engine's serde names, which
/// differ from the wire names for one reason only: `no_combat_limit` for `no_combat_100`. The
/// outbox keeps facts for as long as a consumer may replay them, so the old name stays readable.
mod end_reason_name {
    use hidden_front_rules::EndReason;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    /// Stored names of earlier releases, with the reason each stands for.
    const ALIASES: [(&str, EndReason); 1] = [("no_combat_limit", EndReason::NoCombatLimit)];

    pub(super) fn serialize<S: Serializer>(reason: &EndReason, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(reason.name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<EndReason, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(input)?;
        EndReason::from_name(&name)
            .or_else(|| {
                ALIASES
                    .into_iter()
                    .find_map(|(alias, reason)| (alias == name).then_some(reason))
            })
            .ok_or_else(|| D::Error::custom(format!("unknown end reason {name:?}")))
    }
}

/// One player's rating before and after a game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingChange {
    /// The player.
    pub player: String,
    /// The rating before the game.
    pub old_rating: f64,
    /// The rating after it.
    pub new_rating: f64,
}

/// The kinds of fact as one table: each kind's [`FactBody`] variant, stored name (the JSON
/// `kind` tag) and CloudEvents `type`, so that nothing is listed twice (the `reasons!` table of
/// `hidden-front-api-error` is the model).
macro_rules! fact_kinds {
    ($( $kind:ident = $name:literal, $event_type:literal; )*) => {
        /// The kinds of fact, for names and filters.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FactKind {
            $(
                #[doc = concat!("[`FactBody::", stringify!($kind), "`]: stored as `", $name, "`, sent as `", $event_type, "`.")]
                $kind,
            )*
        }

        impl FactKind {
            /// Every kind.
            pub const ALL: [FactKind; [$($name),*].len()] = [$(FactKind::$kind),*];

            /// The stored name (the JSON `kind` tag): `game_created`, ...
            pub fn name(self) -> &'static str {
                match self { $( FactKind::$kind => $name, )* }
            }

            /// The versioned CloudEvents `type` (`hiddenfront.game.ended.v1`, ...). A change to a
            /// payload that could break a consumer gets a new version, never a changed meaning.
            pub fn event_type(self) -> &'static str {
                match self { $( FactKind::$kind => $event_type, )* }
            }
        }

        impl FactBody {
            /// Its kind.
            pub fn kind(&self) -> FactKind {
                match self { $( FactBody::$kind { .. } => FactKind::$kind, )* }
            }
        }
    };
}

fact_kinds! {
    GameCreated = "game_created", "hiddenfront.game.created.v1";
    SeatsFilled = "seats_filled", "hiddenfront.game.seats_filled.v1";
    PlayStarted = "play_started", "hiddenfront.game.play_started.v1";
    GameEnded = "game_ended", "hiddenfront.game.ended.v1";
    SeatLost = "seat_lost", "hiddenfront.game.seat_lost.v1";
    RatingChanged = "rating_changed", "hiddenfront.rating.changed.v1";
    GameAborted = "game_aborted", "hiddenfront.game.aborted.v1";
    TournamentCreated = "tournament_created", "hiddenfront.tournament.created.v1";
    TournamentStarted = "tournament_started", "hiddenfront.tournament.started.v1";
    TournamentRoundStarted = "tournament_round_started", "hiddenfront.tournament.round_started.v1";
    TournamentFinished = "tournament_finished", "hiddenfront.tournament.finished.v1";
}

impl FactBody {
    /// The tournament a tournament's fact is about; `None` for a game's.
    pub fn tournament_id(&self) -> Option<&str> {
        match self {
            FactBody::TournamentCreated { tournament_id, .. }
            | FactBody::TournamentStarted { tournament_id, .. }
            | FactBody::TournamentRoundStarted { tournament_id, .. }
            | FactBody::TournamentFinished { tournament_id, .. } => Some(tournament_id),
            FactBody::GameCreated { .. }
            | FactBody::SeatsFilled { .. }
            | FactBody::PlayStarted { .. }
            | FactBody::GameEnded { .. }
            | FactBody::SeatLost { .. }
            | FactBody::RatingChanged { .. }
            | FactBody::GameAborted { .. } => None,
        }
    }

    /// The JSON the outbox stores (tagged by `kind`).
    pub fn to_json(&self) -> String {
        // A plain data enum of strings, numbers and options always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads what [`FactBody::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<FactBody, FactDecodeError> {
        serde_json::from_str(text).map_err(|e| FactDecodeError(e.to_string()))
    }
}

/// Somewhere facts can be recorded outside a store's own transactions: the in-memory outbox, for
/// writers in the same process whose own state is in memory too (matchmaking's one-box store),
/// where there is no shared transaction to join. Durable writers record in their transaction.
pub trait FactSink: Send + Sync + std::fmt::Debug {
    /// Appends `facts` to the outbox, in order.
    fn record(&self, facts: &[NewFact]);
}

/// A stored fact that does not decode (a bug or a tampered database).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored lifecycle fact does not decode: {0}")]
pub struct FactDecodeError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(reason: EndReason) -> FactBody {
        FactBody::GameEnded {
            winner: None,
            winner_player: None,
            reason,
            plies: 100,
            south_player: "ann".into(),
            north_player: "bob".into(),
        }
    }

    #[test]
    fn end_reasons_are_written_by_their_wire_names() {
        for reason in EndReason::ALL {
            let json: serde_json::Value =
                serde_json::from_str(&ended(reason).to_json()).expect("JSON");
            assert_eq!(json["reason"], reason.name());
            assert_eq!(FactBody::from_json(&json.to_string()), Ok(ended(reason)));
        }
    }

    /// One body of every kind, in [`FactKind::ALL`]'s order.
    fn one_of_each() -> Vec<FactBody> {
        vec![
            FactBody::GameCreated {
                rules: "hidden-front".into(),
                time_control: "online".into(),
                south_player: "ann".into(),
                north_player: "bob".into(),
            },
            FactBody::SeatsFilled {
                south_player: "ann".into(),
                north_player: "bob".into(),
            },
            FactBody::PlayStarted {
                first_mover: Side::South,
            },
            ended(EndReason::Resigned),
            FactBody::SeatLost {
                side: Side::North,
                player: "bob".into(),
            },
            FactBody::RatingChanged {
                rules: "hidden-front".into(),
                changes: Vec::new(),
            },
            FactBody::GameAborted {
                operator: "ops".into(),
                reason: "stuck".into(),
            },
        ]
        .into_iter()
        .chain(tournament_bodies())
        .collect()
    }

    /// One tournament fact of every kind, in [`FactKind::ALL`]'s order.
    pub(crate) fn tournament_bodies() -> Vec<FactBody> {
        vec![
            FactBody::TournamentCreated {
                tournament_id: "cup".into(),
                organiser: "league".into(),
                format: "swiss".into(),
                rules: "junqi".into(),
                time_control: "online".into(),
                rated: true,
                rounds: 4,
                duration_ms: 0,
                starts_at_ms: 1_800_000_000_000,
                open_to_players: false,
                entrants: vec!["ann".into(), "bob".into(), "cy".into()],
            },
            FactBody::TournamentStarted {
                tournament_id: "cup".into(),
                entrants: vec!["ann".into(), "bob".into(), "cy".into()],
            },
            FactBody::TournamentRoundStarted {
                tournament_id: "cup".into(),
                round: 1,
                rounds: 2,
                pairs: vec![TournamentPair {
                    south_player: "ann".into(),
                    north_player: "bob".into(),
                }],
                bye: Some("cy".into()),
                games_start_at_ms: 1_800_000_000_000,
            },
            FactBody::TournamentFinished {
                tournament_id: "cup".into(),
                rounds: 2,
                standings: vec![TournamentStanding {
                    place: 1,
                    player: "ann".into(),
                    score: 1.5,
                    buchholz: 2.0,
                    sonneborn_berger: 1.25,
                    rating: 1500,
                }],
            },
        ]
    }

    #[test]
    fn tournament_facts_are_keyed_by_their_tournament_and_say_so_in_their_subject() {
        for body in tournament_bodies() {
            let fact = NewFact::about_tournament(body.clone());
            assert_eq!(fact.game_id, tournament_key("cup"));
            assert_eq!(body.tournament_id(), Some("cup"));
        }
        assert_ne!(tournament_key("cup"), tournament_key("cup2"));
        assert_eq!(
            tournament_key("cup"),
            tournament_key("cup"),
            "the same key every time"
        );
        assert_eq!(ended(EndReason::Resigned).tournament_id(), None);
    }

    #[test]
    fn every_kind_is_stored_under_its_table_name_and_sent_under_its_type() {
        let bodies = one_of_each();
        assert_eq!(bodies.len(), FactKind::ALL.len(), "one body of every kind");
        let mut types = std::collections::HashSet::new();
        for (body, kind) in bodies.iter().zip(FactKind::ALL) {
            assert_eq!(body.kind(), kind);
            let json: serde_json::Value = serde_json::from_str(&body.to_json()).expect("JSON");
            assert_eq!(
                json["kind"],
                kind.name(),
                "the serde tag is the table's name"
            );
            assert!(kind.event_type().starts_with("hiddenfront."));
            assert!(
                types.insert(kind.event_type()),
                "{kind:?}'s type is its own"
            );
        }
    }

    #[test]
    fn facts_stored_with_the_old_no_combat_name_still_read() {
        let stored = r#"{"kind":"game_ended","winner":null,"winner_player":null,"reason":"no_combat_limit","plies":100,"south_player":"ann","north_player":"bob"}"#;
        assert_eq!(
            FactBody::from_json(stored),
            Ok(ended(EndReason::NoCombatLimit))
        );
        let unknown = stored.replace("no_combat_limit", "bored");
        assert!(FactBody::from_json(&unknown).is_err());
    }
}
