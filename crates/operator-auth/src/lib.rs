//! Who may use the operator APIs (the admin API, the webhooks' admin API, the organisers' API):
//! operators with a token configured on the process serving them (`--admin-token NAME=TOKEN`, env
//! `HF_ADMIN_TOKEN`, formerly `HF_ADMIN_TOKENS`), sent as `authorization: Bearer TOKEN`. One crate
//! so that every operator API refuses the same way.
//!
//! Players never are. The session holds no player secrets (it trusts the gateway), so it cannot
//! verify a player's JWT; it does not need to: **any well-formed JWT** (three base64url segments
//! whose first decodes to a JSON object naming an `alg`) that is not a configured operator token
//! is refused `PERMISSION_DENIED` (`ADMIN_REQUIRED`), whoever signed it. Anything else that is not
//! an operator token is `UNAUTHENTICATED` (`TOKEN_INVALID`; none at all: `TOKEN_MISSING`). With no
//! operator token configured the whole API refuses every call `FAILED_PRECONDITION`
//! (`ADMIN_NOT_CONFIGURED`) rather than being open.
//!
//! Tokens are compared in constant time, against every configured token, so the time of a refusal
//! says nothing of how much of a guess was right. No token and nothing decoded from one is ever
//! put in an answer or a log line.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hidden_front_api_error::text::{self, TextKind};
use hidden_front_api_error::{ApiError, Reason};
use thiserror::Error;
use tonic::Status;
use tonic::metadata::MetadataMap;

/// Shortest operator token accepted in the configuration, in bytes: a token is a password that
/// opens every game, so it must not be guessable.
pub const MIN_ADMIN_TOKEN_BYTES: usize = 24;

/// Longest credential looked at, in bytes (larger ones are refused without being parsed).
const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// An operator, as the audit log names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// The configured name of their token.
    pub name: String,
}

/// The operator tokens a server accepts.
#[derive(Clone, Default)]
pub struct AdminTokens {
    /// (name, token) pairs.
    tokens: Vec<(String, String)>,
}

impl std::fmt::Debug for AdminTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The names only: the tokens are secrets.
        let names: Vec<&str> = self.tokens.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("AdminTokens")
            .field("names", &names)
            .finish()
    }
}

/// A configured operator token that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AdminTokenError {
    /// Not `NAME=TOKEN`.
    #[error("an admin token must be NAME=TOKEN (the name is who the audit log records)")]
    NotAPair,
    /// The name is empty, too long or has control characters.
    #[error("admin token name {name:?}: {problem}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The token is too short.
    #[error(
        "the admin token of {name:?} is {bytes} bytes; at least {MIN_ADMIN_TOKEN_BYTES} are required"
    )]
    TooShort {
        /// Whose.
        name: String,
        /// Its length.
        bytes: usize,
    },
    /// The token has whitespace or control characters, which no `authorization` value carries.
    #[error("the admin token of {name:?} contains whitespace or control characters")]
    BadToken {
        /// Whose.
        name: String,
    },
    /// Two entries with one name, or one token under two names.
    #[error("admin token {name:?} is configured twice (or its token is another name's)")]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// The credential an operator sends for `value`, as given to a client (the admin CLI): the value
/// itself (`TOKEN`), or the TOKEN of one `NAME=TOKEN` entry, the form the session is configured
/// with. Why: one environment variable (`HF_ADMIN_TOKEN`) then serves the server and the CLI, and
/// an operator may paste either form. A value is read as `NAME=TOKEN` only when the name is a
/// valid name and the token part is long enough to be a configured token, so a bare token that
/// ends in base64 padding (`...==`) is sent whole.
pub fn operator_credential(value: &str) -> &str {
    let value = value.trim();
    match value.split_once('=') {
        Some((name, token))
            if !name.trim().is_empty()
                && text::check("name", name.trim(), TextKind::Id).is_ok()
                && token.trim().len() >= MIN_ADMIN_TOKEN_BYTES =>
        {
            token.trim()
        }
        _ => value,
    }
}

impl AdminTokens {
    /// The tokens of `NAME=TOKEN` pairs (none: the admin API refuses every call).
    pub fn parse<S: AsRef<str>>(pairs: &[S]) -> Result<AdminTokens, AdminTokenError> {
        let mut tokens: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            let (name, token) = pair
                .as_ref()
                .split_once('=')
                .ok_or(AdminTokenError::NotAPair)?;
            let (name, token) = (name.trim(), token.trim());
            if name.is_empty() {
                return Err(AdminTokenError::BadName {
                    name: name.into(),
                    problem: "is empty".into(),
                });
            }
            text::check("name", name, TextKind::Id).map_err(|e| AdminTokenError::BadName {
                name: name.into(),
                problem: e.message().to_owned(),
            })?;
            if token.len() < MIN_ADMIN_TOKEN_BYTES {
                return Err(AdminTokenError::TooShort {
                    name: name.into(),
                    bytes: token.len(),
                });
            }
            if token.len() > MAX_CREDENTIAL_BYTES
                || token.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(AdminTokenError::BadToken { name: name.into() });
            }
            if tokens.iter().any(|(n, t)| n == name || t == token) {
                return Err(AdminTokenError::Duplicate { name: name.into() });
            }
            tokens.push((name.to_owned(), token.to_owned()));
        }
        Ok(AdminTokens { tokens })
    }

    /// Whether any operator token is configured (if not, the admin API is off).
    pub fn is_configured(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The operator whose token `metadata`'s `authorization` carries, or the refusal (see the
    /// module docs for which code when).
    pub fn authenticate(&self, metadata: &MetadataMap) -> Result<Operator, Status> {
        if !self.is_configured() {
            return Err(ApiError::new(
                Reason::AdminNotConfigured,
                "the operator APIs are off: no operator token is configured on this server \
                 (--admin-token NAME=TOKEN or HF_ADMIN_TOKEN)",
            )
            .into());
        }
        let mut values = metadata.get_all("authorization").iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            let missing = metadata.get("authorization").is_none();
            return Err(if missing {
                ApiError::new(
                    Reason::TokenMissing,
                    "the admin API needs an operator token: send `authorization: Bearer <token>`",
                )
            } else {
                ApiError::new(
                    Reason::TokenInvalid,
                    "send exactly one `authorization` value",
                )
            }
            .into());
        };
        let credential = value
            .to_str()
            .ok()
            .filter(|v| v.len() <= MAX_CREDENTIAL_BYTES)
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                Status::from(ApiError::new(
                    Reason::TokenInvalid,
                    "the `authorization` value must be `Bearer <token>`",
                ))
            })?;
        // Every configured token is compared, each in constant time.
        let mut found: Option<&str> = None;
        for (name, token) in &self.tokens {
            if constant_time_eq(token.as_bytes(), credential.as_bytes()) {
                found = Some(name);
            }
        }
        if let Some(name) = found {
            return Ok(Operator {
                name: name.to_owned(),
            });
        }
        if looks_like_jwt(credential) {
            return Err(ApiError::new(
                Reason::AdminRequired,
                "a player's token does not open the admin API: use an operator token",
            )
            .into());
        }
        Err(ApiError::new(
            Reason::TokenInvalid,
            "the operator token is not one this server knows",
        )
        .into())
    }
}

/// Whether `a == b`, in a time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `credential` is shaped like a JWS compact token (RFC 7515): three base64url segments,
/// the first a JSON object header naming its `alg`. Its signature is not checked: the session
/// holds no player keys, and a JWT is never an operator credential whoever signed it.
fn looks_like_jwt(credential: &str) -> bool {
    let mut parts = credential.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let base64url = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if header.is_empty()
        || payload.is_empty()
        || ![header, payload, signature].iter().all(|s| base64url(s))
    {
        return false;
    }
    URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|value| value.get("alg").is_some_and(serde_json::Value::is_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_credential_is_a_token_or_the_token_of_one_entry() {
        let token = "3f1c8a9b2d4e6f708192a3b4c5d6e7f8";
        assert_eq!(operator_credential(token), token);
        assert_eq!(operator_credential(&format!("alice={token}")), token);
        assert_eq!(operator_credential(&format!(" alice={token} ")), token);
        // Base64 padding is part of a token, not a separator.
        let padded = "c2VjcmV0LXRva2VuLW9mLWFsaWNlLWxvbmc=";
        assert_eq!(operator_credential(padded), padded);
        // Too short to be a configured token: sent as given (and refused by the session).
        assert_eq!(operator_credential("alice=short"), "alice=short");
    }
    use tonic::metadata::MetadataValue;

    const ALICE: &str = "alice-0123456789abcdef-token";

    fn tokens() -> AdminTokens {
        AdminTokens::parse(&[
            format!("alice={ALICE}"),
            "bob=bob-fedcba9876543210-token".into(),
        ])
        .unwrap()
    }

    fn with_auth(values: &[&str]) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        for value in values {
            metadata.append("authorization", MetadataValue::try_from(*value).unwrap());
        }
        metadata
    }

    fn reason(result: Result<Operator, Status>) -> (tonic::Code, String) {
        let status = result.unwrap_err();
        (
            status.code(),
            hidden_front_api_error::ErrorSummary::of(&status).reason,
        )
    }

    /// A JWT's shape (header `{"alg":"HS256","typ":"JWT"}`), signature not checked.
    const PLAYER_JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzdWUifQ.c2lnbmF0dXJl";

    #[test]
    fn operators_are_known_by_their_token_and_everyone_else_is_refused() {
        let t = tokens();
        assert_eq!(
            t.authenticate(&with_auth(&[&format!("Bearer {ALICE}")]))
                .unwrap(),
            Operator {
                name: "alice".into()
            }
        );
        use tonic::Code::*;
        for (metadata, want) in [
            (MetadataMap::new(), (Unauthenticated, "TOKEN_MISSING")),
            (
                with_auth(&["Bearer nope"]),
                (Unauthenticated, "TOKEN_INVALID"),
            ),
            (with_auth(&[ALICE]), (Unauthenticated, "TOKEN_INVALID")),
            (
                with_auth(&[&format!("Bearer {ALICE}x")]),
                (Unauthenticated, "TOKEN_INVALID"),
            ),
            (
                with_auth(&[&format!("Bearer {ALICE}"), &format!("Bearer {ALICE}")]),
                (Unauthenticated, "TOKEN_INVALID"),
            ),
            (
                with_auth(&[&format!("Bearer {PLAYER_JWT}")]),
                (PermissionDenied, "ADMIN_REQUIRED"),
            ),
            (
                with_auth(&["Bearer a.b.c"]),
                (Unauthenticated, "TOKEN_INVALID"),
            ),
        ] {
            let (code, reason) = reason(t.authenticate(&metadata));
            assert_eq!((code, reason.as_str()), want, "{metadata:?}");
        }
    }

    #[test]
    fn with_no_token_configured_every_call_is_refused() {
        let none = AdminTokens::parse::<&str>(&[]).unwrap();
        assert!(!none.is_configured());
        for metadata in [MetadataMap::new(), with_auth(&[&format!("Bearer {ALICE}")])] {
            assert_eq!(
                reason(none.authenticate(&metadata)),
                (
                    tonic::Code::FailedPrecondition,
                    "ADMIN_NOT_CONFIGURED".into()
                )
            );
        }
    }

    #[test]
    fn bad_configurations_are_refused_and_debug_hides_tokens() {
        assert_eq!(
            AdminTokens::parse(&["alice"]).unwrap_err(),
            AdminTokenError::NotAPair
        );
        assert!(matches!(
            AdminTokens::parse(&["alice=short"]).unwrap_err(),
            AdminTokenError::TooShort { bytes: 5, .. }
        ));
        assert!(matches!(
            AdminTokens::parse(&[format!("={ALICE}")]).unwrap_err(),
            AdminTokenError::BadName { .. }
        ));
        assert!(matches!(
            AdminTokens::parse(&[format!("alice={ALICE}"), format!("alice2={ALICE}")]).unwrap_err(),
            AdminTokenError::Duplicate { .. }
        ));
        assert!(matches!(
            AdminTokens::parse(&["alice=has a space inside of it, long enough"]).unwrap_err(),
            AdminTokenError::BadToken { .. }
        ));
        let shown = format!("{:?}", tokens());
        assert!(shown.contains("alice") && !shown.contains(ALICE), "{shown}");
    }
}
