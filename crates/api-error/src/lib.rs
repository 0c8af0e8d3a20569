//! The error contract every Hidden Front API keeps with its callers.
//!
//! Clients localise what they show from a *reason*, not from English text, and platform services
//! branch on it, so reasons are part of the API: each refusal answers a [`Reason`] (a stable
//! `SCREAMING_SNAKE_CASE` string carried as `google.rpc.ErrorInfo.reason`, domain [`DOMAIN`]),
//! the gRPC code that reason always comes with, a message a person can act on, and for bad
//! fields `google.rpc.BadRequest` field violations that name each field. The WebSocket API
//! carries the same reason and violations in its error frames ([`ErrorSummary`]).
//!
//! Every answer is bounded: messages are cut at [`MAX_MESSAGE_BYTES`], violations at
//! [`MAX_VIOLATIONS`], and a value is echoed only through [`quote`], which keeps a short prefix.
//! An error that echoed a caller's 10 KB input used to grow past HTTP/2's header limits and
//! reach the caller as a transport failure instead of the real answer.
//!
//! [`text`] holds the checks every string of every request passes before it can reach a store,
//! so a caller's mistake (a NUL byte, a 10 KB id) is an `INVALID_ARGUMENT` naming the field, never
//! a database error.

use std::fmt;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

pub mod layer;
pub mod text;

pub use layer::{ErrorContractLayer, HoldToContract, error_contract_layer};

/// `ErrorInfo.domain` of every reason this project answers.
pub const DOMAIN: &str = "hiddenfront";

/// Longest error message sent to a caller, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// Most field violations listed in one answer (a bad deployment lists every problem; a full
/// board has fewer problems than this).
pub const MAX_VIOLATIONS: usize = 48;

/// Longest field path or violation description, in bytes.
const MAX_VIOLATION_PART_BYTES: usize = 160;

/// Characters of a caller's value that an error message may quote.
pub const QUOTE_CHARS: usize = 24;

macro_rules! reasons {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal => $code:ident, )*) => {
        /// Why a request was refused or failed: stable, machine-readable, part of the API.
        ///
        /// Each reason always comes with the same gRPC code ([`Reason::code`]). New reasons may
        /// be added; a client that meets one it does not know falls back on the code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Reason {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Reason {
            /// Every reason, in the order the API documents them.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant),*];

            /// The reason's wire name, e.g. `NOT_YOUR_TURN`.
            pub const fn as_str(self) -> &'static str {
                match self { $( Reason::$variant => $name, )* }
            }

            /// The gRPC code this reason is always answered with.
            pub const fn code(self) -> Code {
                match self { $( Reason::$variant => Code::$code, )* }
            }

            /// The reason with this wire name.
            pub fn from_name(name: &str) -> Option<Reason> {
                match name { $( $name => Some(Reason::$variant), )* _ => None }
            }
        }
    };
}

reasons! {
    // The request itself.
    /// The request could not be decoded (not a protobuf / JSON message of the expected type).
    MalformedRequest = "MALFORMED_REQUEST" => InvalidArgument,
    /// The request is larger than the server accepts.
    RequestTooLarge = "REQUEST_TOO_LARGE" => OutOfRange,
    /// One or more fields are missing or malformed; `BadRequest` names each.
    InvalidField = "INVALID_FIELD" => InvalidArgument,
    /// The named rule set or one of its options does not exist.
    UnknownRules = "UNKNOWN_RULES" => InvalidArgument,
    /// The operation is not offered here (for example an unknown WebSocket message type).
    UnknownOperation = "UNKNOWN_OPERATION" => Unimplemented,

    // The rules.
    /// The move breaks the rules.
    IllegalMove = "ILLEGAL_MOVE" => InvalidArgument,
    /// The deployment breaks the rules; `BadRequest` lists every problem.
    BadDeployment = "BAD_DEPLOYMENT" => InvalidArgument,
    /// A deployment for the other side.
    WrongSide = "WRONG_SIDE" => InvalidArgument,
    /// It is the other side's turn.
    NotYourTurn = "NOT_YOUR_TURN" => FailedPrecondition,
    /// The command does not fit the game's phase (deployment, play, ended).
    WrongPhase = "WRONG_PHASE" => FailedPrecondition,
    /// The deployment is already confirmed.
    AlreadyConfirmed = "ALREADY_CONFIRMED" => FailedPrecondition,
    /// A draw offer is already pending.
    DrawOfferPending = "DRAW_OFFER_PENDING" => FailedPrecondition,
    /// There is no draw offer to answer.
    NoDrawOffer = "NO_DRAW_OFFER" => FailedPrecondition,
    /// Too soon after this side's last draw offer.
    DrawCooldown = "DRAW_COOLDOWN" => FailedPrecondition,
    /// A timer fired before its deadline by the session's clock; retry at the deadline.
    TimerEarly = "TIMER_EARLY" => FailedPrecondition,

    // Versions and idempotency.
    /// The game is not at the version the request expected: reload and retry.
    StaleVersion = "STALE_VERSION" => Aborted,
    /// Too many concurrent writers on one game; retry with the same idempotency key.
    Contended = "CONTENDED" => Aborted,
    /// No such game.
    GameNotFound = "GAME_NOT_FOUND" => NotFound,
    /// A game with that id exists already.
    GameExists = "GAME_EXISTS" => AlreadyExists,

    // Who may do what.
    /// No credentials were sent.
    TokenMissing = "TOKEN_MISSING" => Unauthenticated,
    /// The credentials are not a token this server accepts (malformed, forged, wrong issuer,
    /// wrong audience, no expiry, unusable subject, more than one `authorization`).
    TokenInvalid = "TOKEN_INVALID" => Unauthenticated,
    /// The token has expired, or is not valid yet.
    TokenExpired = "TOKEN_EXPIRED" => Unauthenticated,
    /// Guest tokens are not accepted here.
    GuestNotAllowed = "GUEST_NOT_ALLOWED" => Unauthenticated,
    /// This server hands out no guest identities (`POST /v1/guest`): guests are refused, or
    /// the platform signs the tokens; sign in through the platform.
    GuestsNotAllowed = "GUESTS_NOT_ALLOWED" => NotFound,
    /// A WebSocket request came before the connection authenticated.
    NotAuthenticated = "NOT_AUTHENTICATED" => Unauthenticated,
    /// The player holds no seat that allows this (acting for another seat, reading a game one
    /// is not in without spectating).
    NotSeated = "NOT_SEATED" => PermissionDenied,
    /// The player may not do this to that object (for example accept their own invite).
    NotAllowed = "NOT_ALLOWED" => PermissionDenied,
    /// The admin API needs an operator's credential; this one (a player's token) is not one.
    AdminRequired = "ADMIN_REQUIRED" => PermissionDenied,
    /// The admin API is off: no operator credential is configured on this server.
    AdminNotConfigured = "ADMIN_NOT_CONFIGURED" => FailedPrecondition,
    /// Too many actions in a short time; slow down.
    RateLimited = "RATE_LIMITED" => ResourceExhausted,
    /// Too many open streams or connections.
    TooManyStreams = "TOO_MANY_STREAMS" => ResourceExhausted,
    /// The connection did not read what was sent to it fast enough and was closed; connect
    /// again and follow each game from its resume point.
    TooSlow = "TOO_SLOW" => ResourceExhausted,
    /// A subscription with that id (WebSocket), or a follow of that game (Connect), is open
    /// already.
    SubscriptionExists = "SUBSCRIPTION_EXISTS" => AlreadyExists,
    /// No open subscription with that id (WebSocket), or no follow of that game (Connect).
    SubscriptionNotFound = "SUBSCRIPTION_NOT_FOUND" => NotFound,
    /// The subscription (or follow) was closed before it started.
    Unsubscribed = "UNSUBSCRIBED" => Cancelled,

    // Matchmaking.
    /// No such ticket for this player.
    TicketNotFound = "TICKET_NOT_FOUND" => NotFound,
    /// The player already has a ticket with that id, or waits in that queue already.
    TicketExists = "TICKET_EXISTS" => AlreadyExists,
    /// The ticket is no longer waiting (matched, cancelled or expired).
    TicketClosed = "TICKET_CLOSED" => FailedPrecondition,
    /// No invite with that code.
    InviteNotFound = "INVITE_NOT_FOUND" => NotFound,
    /// The invite is no longer open (accepted, cancelled or expired).
    InviteClosed = "INVITE_CLOSED" => FailedPrecondition,
    /// The player tried to accept their own invite; another player must.
    OwnInvite = "OWN_INVITE" => FailedPrecondition,
    /// No such match.
    MatchNotFound = "MATCH_NOT_FOUND" => NotFound,
    /// The match is no longer open.
    MatchClosed = "MATCH_CLOSED" => FailedPrecondition,
    /// A matchmaking id is in use already.
    MatchExists = "MATCH_EXISTS" => AlreadyExists,
    /// The computer player cannot play that (its own id as a player, a rule family it lacks).
    ComputerUnavailable = "COMPUTER_UNAVAILABLE" => InvalidArgument,
    /// No free invite code could be drawn; try again.
    InviteCodesExhausted = "INVITE_CODES_EXHAUSTED" => ResourceExhausted,
    /// No organiser's bulk with that id.
    BulkNotFound = "BULK_NOT_FOUND" => NotFound,
    /// A bulk with that id exists with other games or settings.
    BulkExists = "BULK_EXISTS" => AlreadyExists,
    /// The bulk has started (or starts too soon to be stopped): it cannot be cancelled.
    BulkStarted = "BULK_STARTED" => FailedPrecondition,
    /// A bulk names one player in two places.
    PlayerTwice = "PLAYER_TWICE" => InvalidArgument,
    /// A start time that has passed, or one too far ahead.
    StartTimeInvalid = "START_TIME_INVALID" => InvalidArgument,
    /// No organiser's tournament with that id.
    TournamentNotFound = "TOURNAMENT_NOT_FOUND" => NotFound,
    /// A tournament with that id exists with other entrants or settings.
    TournamentExists = "TOURNAMENT_EXISTS" => AlreadyExists,
    /// The tournament takes no entrant now: not open to players, or it starts within 5 s or has
    /// started.
    TournamentClosed = "TOURNAMENT_CLOSED" => FailedPrecondition,
    /// The tournament has as many entrants as it takes.
    TournamentFull = "TOURNAMENT_FULL" => FailedPrecondition,

    // Webhooks (the operators' WebhookAdminService).
    /// No webhook endpoint of that name is configured.
    WebhookEndpointNotFound = "WEBHOOK_ENDPOINT_NOT_FOUND" => NotFound,
    /// The endpoint has no dead letter at that position.
    DeadLetterNotFound = "DEAD_LETTER_NOT_FOUND" => NotFound,

    // The server's side.
    /// The game store failed or could not be reached; retry with the same idempotency key.
    StoreUnavailable = "STORE_UNAVAILABLE" => Unavailable,
    /// The game service failed or could not be reached; retry with the same idempotency key.
    SessionUnavailable = "SESSION_UNAVAILABLE" => Unavailable,
    /// The matchmaking service failed, could not be reached or is not configured.
    MatchmakingUnavailable = "MATCHMAKING_UNAVAILABLE" => Unavailable,
    /// The server is shutting down; reconnect (another replica answers).
    ShuttingDown = "SHUTTING_DOWN" => Unavailable,
    /// The call took longer than its deadline.
    DeadlineExceeded = "DEADLINE_EXCEEDED" => DeadlineExceeded,
    /// Stored data could not be read back.
    CorruptData = "CORRUPT_DATA" => Internal,
    /// A fault of the server (a bug or a misconfiguration); the log says more.
    Internal = "INTERNAL" => Internal,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Reason {
    /// The reason to assume for a status that came without one (tonic's own answers, such as a
    /// size limit or an unknown method, and transport failures).
    pub fn fallback(code: Code) -> Reason {
        match code {
            Code::InvalidArgument => Reason::MalformedRequest,
            Code::OutOfRange => Reason::RequestTooLarge,
            Code::Unauthenticated => Reason::TokenInvalid,
            Code::PermissionDenied => Reason::NotAllowed,
            Code::ResourceExhausted => Reason::RateLimited,
            Code::Unimplemented => Reason::UnknownOperation,
            Code::DeadlineExceeded => Reason::DeadlineExceeded,
            Code::Unavailable => Reason::SessionUnavailable,
            Code::NotFound => Reason::GameNotFound,
            Code::Aborted => Reason::Contended,
            Code::Cancelled => Reason::Unsubscribed,
            _ => Reason::Internal,
        }
    }
}

/// One bad field: its path (`context.idempotency_key`, `deployment.placements[3].square`) and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    /// The field's path in the request, proto field names joined by `.`.
    pub field: String,
    /// What is wrong, for a person.
    pub description: String,
}

/// An error answered to an API caller: a reason, a bounded message, and any field violations.
/// Build one where the refusal is decided; it becomes a [`Status`] with `google.rpc` details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    reason: Reason,
    message: String,
    violations: Vec<FieldViolation>,
}

impl ApiError {
    /// An error with this reason and message (cut at [`MAX_MESSAGE_BYTES`]).
    pub fn new(reason: Reason, message: impl Into<String>) -> ApiError {
        ApiError {
            reason,
            message: bounded(message.into(), MAX_MESSAGE_BYTES),
            violations: Vec::new(),
        }
    }

    /// An [`Reason::InvalidField`] error for one field; the message is `field: description`.
    pub fn invalid_field(field: impl Into<String>, description: impl Into<String>) -> ApiError {
        let (field, description) = (field.into(), description.into());
        ApiError::new(Reason::InvalidField, format!("{field}: {description}"))
            .with_violation(field, description)
    }

    /// An [`Reason::InvalidField`] error for a required field left empty.
    pub fn missing_field(field: impl Into<String>) -> ApiError {
        let field = field.into();
        ApiError::new(Reason::InvalidField, format!("{field} is required"))
            .with_violation(field, "is required")
    }

    /// This error with one more field violation (beyond [`MAX_VIOLATIONS`] they are dropped).
    pub fn with_violation(
        mut self,
        field: impl Into<String>,
        description: impl Into<String>,
    ) -> ApiError {
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(FieldViolation {
                field: bounded(field.into(), MAX_VIOLATION_PART_BYTES),
                description: bounded(description.into(), MAX_VIOLATION_PART_BYTES),
            });
        }
        self
    }

    /// The reason.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The gRPC code (always the reason's).
    pub fn code(&self) -> Code {
        self.reason.code()
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The field violations.
    pub fn violations(&self) -> &[FieldViolation] {
        &self.violations
    }

    /// The gRPC status: the reason's code, the message, and `google.rpc.ErrorInfo` (plus
    /// `BadRequest` when fields are named) in `grpc-status-details-bin`.
    pub fn to_status(&self) -> Status {
        let mut details = ErrorDetails::with_error_info(
            self.reason.as_str(),
            DOMAIN,
            std::collections::HashMap::new(),
        );
        if !self.violations.is_empty() {
            details.set_bad_request(
                self.violations
                    .iter()
                    .map(|v| {
                        tonic_types::FieldViolation::new(v.field.clone(), v.description.clone())
                    })
                    .collect::<Vec<_>>(),
            );
        }
        Status::with_error_details(self.code(), self.message.clone(), details)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.reason)
    }
}

impl std::error::Error for ApiError {}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        error.to_status()
    }
}

/// What a caller needs from an error status: its reason and field violations, read from the
/// `google.rpc` details (or the code's [`Reason::fallback`] when there are none). The WebSocket
/// API sends these in its error frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorSummary {
    /// The reason's wire name.
    pub reason: String,
    /// The field violations, if any.
    pub violations: Vec<FieldViolation>,
}

impl ErrorSummary {
    /// Reads `status`'s details.
    pub fn of(status: &Status) -> ErrorSummary {
        let details = status.get_error_details();
        let reason = details
            .error_info()
            .map(|info| info.reason.clone())
            .filter(|reason| !reason.is_empty())
            .unwrap_or_else(|| Reason::fallback(status.code()).as_str().to_owned());
        let violations = details
            .bad_request()
            .map(|bad| {
                bad.field_violations
                    .iter()
                    .take(MAX_VIOLATIONS)
                    .map(|v| FieldViolation {
                        field: bounded(v.field.clone(), MAX_VIOLATION_PART_BYTES),
                        description: bounded(v.description.clone(), MAX_VIOLATION_PART_BYTES),
                    })
                    .collect()
            })
            .unwrap_or_default();
        ErrorSummary { reason, violations }
    }
}

/// A fault of the server itself ([`Reason::Internal`]): a peer service broke the internal
/// contract, or a bug. The message is for the operator as much as the caller.
pub fn internal(message: impl Into<String>) -> Status {
    ApiError::new(Reason::Internal, message).into()
}

/// Whether `status` already carries an `ErrorInfo` reason.
pub fn has_reason(status: &Status) -> bool {
    status.get_details_error_info().is_some()
}

/// `status` with a reason and a bounded message: unchanged when it has a reason already, else
/// the code's [`Reason::fallback`] with its message cut at [`MAX_MESSAGE_BYTES`]. For statuses
/// the project did not build (tonic's own, a peer's transport failure).
pub fn ensure_reason(status: Status) -> Status {
    if has_reason(&status) && status.message().len() <= MAX_MESSAGE_BYTES {
        return status;
    }
    let summary = ErrorSummary::of(&status);
    let reason = Reason::from_name(&summary.reason).unwrap_or(Reason::fallback(status.code()));
    let mut error = ApiError {
        reason,
        message: bounded(status.message().to_owned(), MAX_MESSAGE_BYTES),
        violations: Vec::new(),
    };
    for v in summary.violations {
        error = error.with_violation(v.field, v.description);
    }
    // Keep the status's own code: a peer's UNAVAILABLE stays UNAVAILABLE even if its reason
    // names another code.
    let rebuilt = error.to_status();
    Status::with_details(
        status.code(),
        rebuilt.message().to_owned(),
        rebuilt.details().to_vec().into(),
    )
}

/// A caller's value as an error message may show it: at most [`QUOTE_CHARS`] characters, quoted
/// and escaped (control characters visible), with `…` when cut.
pub fn quote(value: &str) -> String {
    let mut chars = value.chars();
    let prefix: String = chars.by_ref().take(QUOTE_CHARS).collect();
    let cut = chars.next().is_some();
    let mut quoted = format!("{prefix:?}");
    if cut {
        quoted.insert(quoted.len() - 1, '…');
    }
    quoted
}

/// Another library's error text (serde, a parser) as an error message may carry it: every word
/// longer than [`QUOTE_CHARS`] characters is cut to that many with `…` (such texts quote the
/// caller's value, e.g. ``unknown variant `xxxx…` ``), and the whole to 300 bytes.
pub fn brief(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(300));
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let mut chars = word.chars();
        out.extend(chars.by_ref().take(QUOTE_CHARS));
        if chars.next().is_some() {
            out.push('…');
        }
        if out.len() > 300 {
            break;
        }
    }
    bounded(out, 300)
}

/// `text` cut to at most `max` bytes at a character boundary (with `…` when cut).
fn bounded(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_unique_screaming_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &reason in Reason::ALL {
            let name = reason.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{name}"
            );
            assert_eq!(Reason::from_name(name), Some(reason));
        }
        assert_eq!(Reason::from_name("NOPE"), None);
    }

    #[test]
    fn a_status_carries_reason_code_and_violations() {
        let status = ApiError::invalid_field("context.idempotency_key", "contains a NUL byte")
            .with_violation("context.game_id", "is required")
            .to_status();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "context.idempotency_key: contains a NUL byte"
        );
        let summary = ErrorSummary::of(&status);
        assert_eq!(summary.reason, "INVALID_FIELD");
        assert_eq!(
            summary.violations,
            vec![
                FieldViolation {
                    field: "context.idempotency_key".into(),
                    description: "contains a NUL byte".into()
                },
                FieldViolation {
                    field: "context.game_id".into(),
                    description: "is required".into()
                }
            ]
        );
        assert_eq!(
            status.get_details_error_info().unwrap().domain,
            DOMAIN.to_owned()
        );
    }

    #[test]
    fn a_status_without_details_gets_the_codes_fallback_reason() {
        let status = ensure_reason(Status::out_of_range("x".repeat(5000)));
        assert_eq!(status.code(), Code::OutOfRange);
        assert!(status.message().len() <= MAX_MESSAGE_BYTES);
        assert_eq!(ErrorSummary::of(&status).reason, "REQUEST_TOO_LARGE");
        // A status with a reason is kept as it is.
        let kept = ensure_reason(ApiError::new(Reason::NotYourTurn, "wait").to_status());
        assert_eq!(ErrorSummary::of(&kept).reason, "NOT_YOUR_TURN");
        assert_eq!(kept.message(), "wait");
    }

    #[test]
    fn violations_are_capped() {
        let mut error = ApiError::new(Reason::BadDeployment, "bad");
        for i in 0..500 {
            error = error.with_violation(format!("f{i}"), "d".repeat(10_000));
        }
        assert_eq!(error.violations().len(), MAX_VIOLATIONS);
        let status = error.to_status();
        assert!(
            status.details().len() < 12 * 1024,
            "{}",
            status.details().len()
        );
    }

    #[test]
    fn quote_keeps_a_short_escaped_prefix() {
        assert_eq!(quote("A6"), "\"A6\"");
        assert_eq!(quote("a\0b"), "\"a\\0b\"");
        let long = quote(&"x".repeat(10_000));
        assert_eq!(long, format!("\"{}…\"", "x".repeat(QUOTE_CHARS)));
    }

    #[test]
    fn brief_cuts_quoted_values_in_foreign_texts() {
        let text = format!(
            "unknown variant `{}`, expected one of `a`, `b`",
            "x".repeat(10_000)
        );
        let short = brief(&text);
        assert!(short.len() < 120, "{short}");
        assert!(short.starts_with("unknown variant `xxxx"));
        assert!(short.ends_with("expected one of `a`, `b`"));
        assert_eq!(brief("plain words stay"), "plain words stay");
    }

    /// The reasons are part of the API: the docs page and the protos' comment list each.
    #[test]
    fn docs_and_protos_list_every_reason_and_no_other() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let docs = std::fs::read_to_string(format!("{root}/docs/errors.md")).unwrap();
        let proto =
            std::fs::read_to_string(format!("{root}/proto/hiddenfront/v1/game.proto")).unwrap();
        for reason in Reason::ALL {
            assert!(
                docs.contains(&format!("| `{reason}` |")),
                "docs/errors.md lacks {reason}"
            );
            assert!(
                proto.contains(&format!(" {reason}")),
                "game.proto lacks {reason}"
            );
        }
        for line in docs.lines().filter(|l| l.starts_with("| `")) {
            let name = line.split('`').nth(1).unwrap();
            assert!(
                Reason::from_name(name).is_some(),
                "docs/errors.md lists unknown {name}"
            );
        }
    }

    proptest! {
        #[test]
        fn messages_are_bounded_at_a_char_boundary(text in ".{0,3000}") {
            let error = ApiError::new(Reason::Internal, text.clone());
            prop_assert!(error.message().len() <= MAX_MESSAGE_BYTES);
            prop_assert!(text.starts_with(error.message().trim_end_matches('…')));
        }
    }
}
