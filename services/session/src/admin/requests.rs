//! The admin API's request fields, checked at the edge: each problem names its field, so an
//! operator's typo is `INVALID_ARGUMENT`, never a store error.

use crate::errors::{check_text, invalid_field, wire_status};
use crate::request::{parse_game_id, validate_player};
use hidden_front_api_error::quote;
use hidden_front_api_error::text::TextKind;
use hidden_front_proto::v1 as pb;
use hidden_front_store::admin::MAX_ADMIN_PAGE;
use hidden_front_store::{AuditQuery, GameCursor, GameFilter};
use hidden_front_wire as wire;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tonic::Status;
use uuid::Uuid;

/// The page size when a request asks for none.
const DEFAULT_PAGE: usize = 50;

/// The longest idleness a "stuck" search may ask for: ten years.
const MAX_IDLE_SECONDS: u64 = 10 * 365 * 24 * 3600;

/// The latest time a request may name, in milliseconds since the Unix epoch (the year 9999).
const MAX_UNIX_MILLIS: u64 = 253_402_300_799_999;

/// An operator's reason (`field`): required, a note within the shared text rules.
pub(crate) fn reason(field: &str, value: &str) -> Result<(), Status> {
    if value.trim().is_empty() {
        return Err(invalid_field(
            field,
            "is required: say why (a ticket, an incident); the audit log records it",
        ));
    }
    check_text(field, value, TextKind::Note)
}

/// An idempotency key (`field`): required, within the shared text rules.
pub(crate) fn idempotency_key(field: &str, value: &str) -> Result<(), Status> {
    if value.is_empty() {
        return Err(invalid_field(
            field,
            "is required: a unique key per abort makes retries safe",
        ));
    }
    check_text(field, value, TextKind::Key)
}

/// A page size: 0 is the default, more than [`MAX_ADMIN_PAGE`] is refused.
fn limit(value: u32) -> Result<usize, Status> {
    match value as usize {
        0 => Ok(DEFAULT_PAGE),
        n if n <= MAX_ADMIN_PAGE => Ok(n),
        n => Err(invalid_field(
            "limit",
            format!("must be at most {MAX_ADMIN_PAGE}, got {n}"),
        )),
    }
}

/// A time in milliseconds since the Unix epoch (0: not given).
fn time(field: &str, millis: u64) -> Result<Option<SystemTime>, Status> {
    match millis {
        0 => Ok(None),
        m if m > MAX_UNIX_MILLIS => Err(invalid_field(
            field,
            format!("{m} is after the year 9999: milliseconds since the Unix epoch are expected"),
        )),
        m => Ok(Some(UNIX_EPOCH + Duration::from_millis(m))),
    }
}

/// The text form of a cursor: `<microseconds since the epoch>-<game id>`.
pub(crate) fn cursor_text(cursor: &GameCursor) -> String {
    let micros = cursor
        .created_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!("{micros}-{}", cursor.game_id.simple())
}

/// A cursor from [`cursor_text`].
fn parse_cursor(text: &str) -> Result<GameCursor, Status> {
    let bad = || {
        invalid_field(
            "cursor",
            format!(
                "{} is not a cursor this API gave out: pass a response's next_cursor unchanged",
                quote(text)
            ),
        )
    };
    let (micros, id) = text.split_once('-').ok_or_else(bad)?;
    let micros: u64 = micros.parse().map_err(|_| bad())?;
    if micros > MAX_UNIX_MILLIS * 1000 {
        return Err(bad());
    }
    let game_id = Uuid::try_parse(id).map_err(|_| bad())?;
    Ok(GameCursor {
        created_at: UNIX_EPOCH + Duration::from_micros(micros),
        game_id,
    })
}

/// A `FindGames` request as a store filter; `now` (the session's clock) anchors `idle_seconds`.
pub(crate) fn game_filter(
    request: &pb::FindGamesRequest,
    now: SystemTime,
) -> Result<GameFilter, Status> {
    let player = match request.player.as_str() {
        "" => None,
        p => {
            validate_player("player", p)?;
            Some(p.to_owned())
        }
    };
    let phase = match request.phase {
        0 => None,
        p => Some(wire::phase_from_proto("phase", p).map_err(wire_status)?),
    };
    let rules = match request.rules.as_str() {
        "" => None,
        r => {
            check_text("rules", r, TextKind::Rules)?;
            Some(r.to_owned())
        }
    };
    let created_from = time("created_from_unix_millis", request.created_from_unix_millis)?;
    let created_before = time(
        "created_before_unix_millis",
        request.created_before_unix_millis,
    )?;
    if let (Some(from), Some(before)) = (created_from, created_before)
        && before <= from
    {
        return Err(invalid_field(
            "created_before_unix_millis",
            "must be after created_from_unix_millis (the range is [from, before))",
        ));
    }
    let idle_since = match request.idle_seconds {
        0 => None,
        s if s > MAX_IDLE_SECONDS => {
            return Err(invalid_field(
                "idle_seconds",
                format!("must be at most {MAX_IDLE_SECONDS} (ten years), got {s}"),
            ));
        }
        s => Some(
            now.checked_sub(Duration::from_secs(s))
                .unwrap_or(UNIX_EPOCH),
        ),
    };
    let after = match request.cursor.as_str() {
        "" => None,
        c => Some(parse_cursor(c)?),
    };
    Ok(GameFilter {
        game_id: None,
        player,
        phase,
        rules,
        created_from,
        created_before,
        idle_since,
        after,
        limit: limit(request.limit)?,
    })
}

/// A `ListAuditLog` request as a store query.
pub(crate) fn audit_query(request: &pb::ListAuditLogRequest) -> Result<AuditQuery, Status> {
    let game_id = match request.game_id.as_str() {
        "" => None,
        id => Some(parse_game_id("game_id", id)?),
    };
    if request.before_id != 0 && request.after_id != 0 {
        return Err(invalid_field(
            "after_id",
            "give before_id (newest first) or after_id (oldest first), not both",
        ));
    }
    Ok(AuditQuery {
        game_id,
        before: (request.before_id != 0).then_some(request.before_id),
        after: (request.after_id != 0).then_some(request.after_id),
        limit: limit(request.limit)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hidden_front_api_error::ErrorSummary;

    fn field_of(status: Status) -> String {
        let summary = ErrorSummary::of(&status);
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        summary.violations[0].field.clone()
    }

    #[test]
    fn bad_filters_name_their_field() {
        let now = SystemTime::now();
        let ok = pb::FindGamesRequest::default();
        assert_eq!(game_filter(&ok, now).unwrap().limit, DEFAULT_PAGE);
        for (request, field) in [
            (
                pb::FindGamesRequest {
                    player: "a\0b".into(),
                    ..ok.clone()
                },
                "player",
            ),
            (
                pb::FindGamesRequest {
                    phase: 99,
                    ..ok.clone()
                },
                "phase",
            ),
            (
                pb::FindGamesRequest {
                    rules: "r".repeat(300),
                    ..ok.clone()
                },
                "rules",
            ),
            (
                pb::FindGamesRequest {
                    created_from_unix_millis: 2_000,
                    created_before_unix_millis: 1_000,
                    ..ok.clone()
                },
                "created_before_unix_millis",
            ),
            (
                pb::FindGamesRequest {
                    created_from_unix_millis: u64::MAX,
                    ..ok.clone()
                },
                "created_from_unix_millis",
            ),
            (
                pb::FindGamesRequest {
                    idle_seconds: u64::MAX,
                    ..ok.clone()
                },
                "idle_seconds",
            ),
            (
                pb::FindGamesRequest {
                    limit: 501,
                    ..ok.clone()
                },
                "limit",
            ),
            (
                pb::FindGamesRequest {
                    cursor: "12-not-a-uuid".into(),
                    ..ok.clone()
                },
                "cursor",
            ),
        ] {
            assert_eq!(field_of(game_filter(&request, now).unwrap_err()), field);
        }
    }

    #[test]
    fn cursors_round_trip() {
        let cursor = GameCursor {
            created_at: UNIX_EPOCH + Duration::from_micros(1_764_600_000_123_456),
            game_id: Uuid::now_v7(),
        };
        assert_eq!(parse_cursor(&cursor_text(&cursor)).unwrap(), cursor);
    }

    #[test]
    fn reasons_and_keys_are_required_and_bounded() {
        assert_eq!(field_of(reason("reason", " ").unwrap_err()), "reason");
        assert_eq!(
            field_of(reason("reason", &"x".repeat(513)).unwrap_err()),
            "reason"
        );
        assert!(reason("reason", "ticket 42: stuck game").is_ok());
        assert_eq!(
            field_of(idempotency_key("idempotency_key", "").unwrap_err()),
            "idempotency_key"
        );
        let both = pb::ListAuditLogRequest {
            before_id: 3,
            after_id: 1,
            ..Default::default()
        };
        assert_eq!(field_of(audit_query(&both).unwrap_err()), "after_id");
    }
}
