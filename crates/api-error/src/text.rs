//! Checks every string of every request passes at the service's edge, before anything reaches a
//! store: no control characters (a NUL byte is refused by Postgres, which once made a caller's
//! typo look like a database outage), and a length cap per kind of field.
//!
//! Protobuf already guarantees valid UTF-8 for `string` fields (the codec refuses anything else
//! as [`crate::Reason::MalformedRequest`]); the WebSocket API's JSON is UTF-8 by construction.

use crate::{ApiError, quote};

/// What kind of text a field holds, which decides its length cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A player id, a gateway id, a clock id, a ticket or match id: at most 128 bytes.
    Id,
    /// An idempotency or creation key: at most 128 bytes.
    Key,
    /// A rule-set name with its options (`hidden-front+hq-mobile+...`): at most 256 bytes.
    Rules,
    /// A short name (a time control, an invite code, a queue name): at most 64 bytes.
    Name,
    /// A square or piece code (`A6`, `d1+e1`, `9`): at most 16 bytes.
    Token,
    /// A W3C trace context header value: at most 512 bytes.
    TraceContext,
    /// A person's note kept on record (an operator's reason for an inspection or an abort): at
    /// most 512 bytes.
    Note,
}

impl TextKind {
    /// The longest value accepted, in bytes.
    pub const fn max_bytes(self) -> usize {
        match self {
            TextKind::Id | TextKind::Key => 128,
            TextKind::Rules => 256,
            TextKind::Name => 64,
            TextKind::Token => 16,
            TextKind::TraceContext | TextKind::Note => 512,
        }
    }
}

/// Checks `value` of `field` (a path such as `context.idempotency_key`): at most the kind's
/// length, no control characters. Empty values pass; use [`required`] where one is needed.
pub fn check(field: &str, value: &str, kind: TextKind) -> Result<(), ApiError> {
    let max = kind.max_bytes();
    if value.len() > max {
        return Err(ApiError::invalid_field(
            field,
            format!("is {} bytes long; at most {max} are accepted", value.len()),
        ));
    }
    if let Some(bad) = value.chars().find(|c| c.is_control()) {
        return Err(ApiError::invalid_field(
            field,
            format!(
                "contains the control character U+{:04X} in {}",
                bad as u32,
                quote(value)
            ),
        ));
    }
    Ok(())
}

/// [`check`], and refuses an empty value as missing.
pub fn required(field: &str, value: &str, kind: TextKind) -> Result<(), ApiError> {
    if value.is_empty() {
        return Err(ApiError::missing_field(field));
    }
    check(field, value, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorSummary, Reason};
    use proptest::prelude::*;

    #[test]
    fn nul_and_control_characters_are_refused_naming_the_field() {
        for value in ["a\0b", "tab\there", "\u{7f}", "line\n"] {
            let error = check("context.idempotency_key", value, TextKind::Key).unwrap_err();
            assert_eq!(error.reason(), Reason::InvalidField);
            assert_eq!(error.violations()[0].field, "context.idempotency_key");
            assert!(error.message().starts_with("context.idempotency_key: "));
        }
        assert!(check("k", "ordinary-key_1:ü한中", TextKind::Key).is_ok());
    }

    #[test]
    fn caps_depend_on_the_kind_and_nothing_long_is_echoed() {
        let long = "x".repeat(10_000);
        let error = check("rules", &long, TextKind::Rules).unwrap_err();
        assert!(
            !error.message().contains(&"x".repeat(64)),
            "{}",
            error.message()
        );
        assert!(check("rules", &"r".repeat(256), TextKind::Rules).is_ok());
        assert!(check("player", &"p".repeat(129), TextKind::Id).is_err());
        let missing = required("player", "", TextKind::Id).unwrap_err();
        assert_eq!(missing.message(), "player is required");
        let summary = ErrorSummary::of(&missing.to_status());
        assert_eq!(summary.violations[0].field, "player");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_text_is_answered_without_panic_and_briefly(value in any::<String>()) {
            if let Err(error) = check("f", &value, TextKind::Name) {
                prop_assert!(error.message().len() < 200);
            }
        }
    }
}
