//! Who is calling: bearer-token authentication for the gateway, the only public door.
//!
//! Players arrive with a JWT (RFC 7519) that another platform service issued, whose `sub` is the
//! player id. The gateway never issues production tokens and never keeps sessions of its own: it
//! only verifies, so gateways stay stateless and any replica can serve any player.
//!
//! # What is accepted
//!
//! - **Algorithms.** `HS256` with shared secrets ([`AuthConfig::hs256_secrets`]), and the
//!   asymmetric algorithms of [`PublicKeyAlgorithm`] with PEM public keys
//!   ([`AuthConfig::public_keys_pem`]). Every key is bound to exactly one algorithm, and a token is
//!   only ever checked against the keys of the algorithm its header names, so an `HS256` token can
//!   never be verified with a public key used as an HMAC secret (the classic "alg confusion"), and
//!   `none` is not an algorithm at all. Several keys per algorithm allow rotation: a token is
//!   accepted when any of them verifies it.
//! - **Time.** `exp` is required; `nbf` and `iat` are honoured when present; all three with
//!   [`AuthConfig::leeway_seconds`] of tolerance for clock skew.
//! - **Subject.** `sub` is required, non-empty, at most [`MAX_SUBJECT_BYTES`] bytes, without
//!   leading or trailing whitespace and without control or invisible formatting characters, so a
//!   player id is always printable and two ids that look the same are the same.
//! - **Issuer and audience.** Checked (and then required) when configured. As RFC 7519 demands, a
//!   token that names an audience is refused when this gateway has none configured.
//! - **Guests.** A token carrying `"guest": true` is a guest's; refused unless
//!   [`AuthConfig::allow_guest_tokens`].
//!
//! # Errors
//!
//! Every problem with a token is an [`AuthError`] that becomes `UNAUTHENTICATED` through
//! [`AuthError::to_status`], with a message that says what to do and never repeats the token or
//! anything decoded from it (messages end up in client logs and bug reports).
//!
//! The crypto is `jsonwebtoken` on its pure-Rust backend, so building needs no system library.
//!
//! # Tokens verified before
//!
//! A player sends the same token with every call (two a move), so each [`Authenticator`] keeps
//! the tokens it verified ([`MAX_VERIFIED_TOKENS`] at most, all forgotten when full): a token
//! seen again, byte for byte, is the same player without the signature, base64 and JSON work
//! again, but only while its own times hold without any leeway (after `nbf` and `iat`, before
//! `exp`); outside them it is checked in full, which gives the exact answer. The keys, issuer,
//! audience and guest policy are fixed for an authenticator's life, so nothing else can change
//! the answer for the same bytes. Only accepted tokens are kept.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::crypto::CryptoProvider;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::Serialize;
use serde_json::{Map, Value};

/// The HS256 secret of the one-box setup (`hidden-front serve` with no secret configured, and
/// `hidden-front token` by default), so a developer can mint a token and play without any setup.
/// It is public, so anyone can sign with it: never use it where strangers can connect.
pub const DEV_SECRET: &str = "hidden-front-dev-secret-change-me";

/// Smallest accepted HS256 secret, in bytes. RFC 7518 §3.2 requires a key at least as long as
/// the hash output (256 bits); shorter secrets can be brute-forced from a single token.
pub const MIN_HS256_SECRET_BYTES: usize = 32;

/// Largest accepted `sub` (player id), in bytes: ids travel in every event and log line, and
/// the session service stores them.
pub const MAX_SUBJECT_BYTES: usize = 128;

/// Most tokens an [`Authenticator`] remembers as verified; when full it forgets them all (each
/// is then verified once more on its next use). A few hundred bytes each.
pub const MAX_VERIFIED_TOKENS: usize = 32_768;

/// Largest accepted token, in bytes. Platform tokens are a few hundred bytes; the cap keeps a
/// hostile client from making the gateway base64-decode and parse megabytes per request.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Largest accepted [`AuthConfig::leeway_seconds`]: more than an hour of clock skew means a
/// broken clock, and an unbounded leeway would make expiry meaningless.
pub const MAX_LEEWAY_SECONDS: u64 = 3600;

/// Default [`AuthConfig::leeway_seconds`]: enough for ordinary NTP-synchronised clocks.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 60;

/// The smallest RSA modulus accepted for RS*/PS* keys, in bits (NIST SP 800-131A).
const MIN_RSA_BITS: usize = 2048;

/// An asymmetric JWS algorithm a public key can be configured for.
///
/// Its own type rather than `jsonwebtoken::Algorithm`, so that configuration cannot pair a PEM
/// public key with an HMAC algorithm (which is how alg-confusion attacks work) and callers need
/// not depend on `jsonwebtoken`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PublicKeyAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256: what most identity providers sign with.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// Ed25519: small keys, fast, no parameter choices to get wrong.
    EdDSA,
}

impl PublicKeyAlgorithm {
    /// Every algorithm, for help texts and exhaustive tests.
    pub const ALL: [PublicKeyAlgorithm; 9] = [
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The JOSE name (`"RS256"`, `"EdDSA"`, ...), as it appears in a token's `alg` header and in
    /// configuration.
    pub fn as_str(self) -> &'static str {
        alg_name(self.jwt())
    }

    /// The `jsonwebtoken` algorithm.
    fn jwt(self) -> Algorithm {
        match self {
            Self::RS256 => Algorithm::RS256,
            Self::RS384 => Algorithm::RS384,
            Self::RS512 => Algorithm::RS512,
            Self::PS256 => Algorithm::PS256,
            Self::PS384 => Algorithm::PS384,
            Self::PS512 => Algorithm::PS512,
            Self::ES256 => Algorithm::ES256,
            Self::ES384 => Algorithm::ES384,
            Self::EdDSA => Algorithm::EdDSA,
        }
    }
}

impl fmt::Display for PublicKeyAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PublicKeyAlgorithm {
    type Err = AuthError;

    /// Parses a JOSE name, ignoring ASCII case (configuration is typed by people).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|alg| alg.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                AuthError::Config(format!(
                    "unknown public-key algorithm {s:?}; expected one of {}",
                    Self::ALL.map(Self::as_str).join(", ")
                ))
            })
    }
}

/// How the gateway decides whom to believe: keys, expected issuer and audience, guest policy.
///
/// Built by the binary from flags and environment; [`Authenticator::new`] checks it once at
/// startup so that a mistake stops the process instead of locking every player out at runtime.
#[derive(Clone)]
pub struct AuthConfig {
    /// Shared secrets for HS256 tokens, each at least [`MIN_HS256_SECRET_BYTES`] long. More than
    /// one allows rotation without downtime.
    pub hs256_secrets: Vec<Vec<u8>>,
    /// Public keys (PEM `PUBLIC KEY`, or `RSA PUBLIC KEY` for RSA), each with the one algorithm
    /// it verifies. Private keys and certificates are refused: the gateway only verifies.
    pub public_keys_pem: Vec<(PublicKeyAlgorithm, String)>,
    /// When set, tokens must carry exactly this `iss`.
    pub issuer: Option<String>,
    /// When set, tokens must name this audience in `aud`; when unset, tokens naming any
    /// audience are refused (RFC 7519 §4.1.3).
    pub audience: Option<String>,
    /// Whether tokens with `"guest": true` are accepted (the one-box setup and casual play do;
    /// ranked deployments may not).
    pub allow_guest_tokens: bool,
    /// Clock-skew tolerance for `exp`, `nbf` and `iat`, at most [`MAX_LEEWAY_SECONDS`].
    pub leeway_seconds: u64,
}

impl AuthConfig {
    /// The one-box setup: HS256 with [`DEV_SECRET`], guests allowed, no issuer or audience. Matches
    /// what `hidden-front token` mints by default.
    pub fn dev() -> AuthConfig {
        AuthConfig {
            hs256_secrets: vec![DEV_SECRET.as_bytes().to_vec()],
            allow_guest_tokens: true,
            ..AuthConfig::default()
        }
    }
}

impl Default for AuthConfig {
    /// No keys at all (which [`Authenticator::new`] refuses), guests refused, default leeway: the
    /// base to fill in from configuration.
    fn default() -> Self {
        AuthConfig {
            hs256_secrets: Vec::new(),
            public_keys_pem: Vec::new(),
            issuer: None,
            audience: None,
            allow_guest_tokens: false,
            leeway_seconds: DEFAULT_LEEWAY_SECONDS,
        }
    }
}

impl fmt::Debug for AuthConfig {
    /// Shows the shape of the configuration but never a secret, so it can be logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field(
                "hs256_secrets",
                &format_args!("[{} redacted]", self.hs256_secrets.len()),
            )
            .field(
                "public_keys_pem",
                &self
                    .public_keys_pem
                    .iter()
                    .map(|(alg, _)| *alg)
                    .collect::<Vec<_>>(),
            )
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("allow_guest_tokens", &self.allow_guest_tokens)
            .field("leeway_seconds", &self.leeway_seconds)
            .finish()
    }
}

/// An authenticated caller: what the rest of the gateway may rely on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Player {
    /// The player id (the token's `sub`), checked to be non-empty, short and printable.
    pub id: String,
    /// Whether the token was a guest's (`"guest": true`); guests may be kept out of ranked play.
    pub guest: bool,
    /// Whether the platform marked the account as a bot (`"bot": true`): a program, which never
    /// enters a rated queue, so it never moves a person's rating (docs/matchmaking.md, "Rating
    /// integrity").
    pub bot: bool,
}

/// Why a caller was not authenticated, or why the configuration was refused.
///
/// Every message says what to do next and never contains the token or anything decoded from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No credentials were sent at all.
    #[error("no credentials: send the header `authorization: Bearer <token>`")]
    Missing,
    /// The credentials are not a `Bearer` JWT this server can read; the reason is fixed text.
    #[error("malformed credentials: {0}")]
    Malformed(&'static str),
    /// More than one `authorization` header (or gRPC metadata entry): refused whatever their
    /// order, since a proxy and this server could each read a different one of them.
    #[error(
        "more than one `authorization` header: send exactly one `authorization: Bearer <token>`"
    )]
    MoreThanOneHeader,
    /// The token's `alg` is a real algorithm, but no configured key uses it.
    #[error(
        "token is signed with {0}, which this server does not accept; get a token from the issuer this server trusts"
    )]
    AlgorithmNotAccepted(&'static str),
    /// No configured key verifies the signature: forged, altered, or from another issuer.
    #[error(
        "token signature does not verify: it was altered or issued for another server; sign in again"
    )]
    BadSignature,
    /// `exp` has passed (beyond the leeway).
    #[error("token has expired: sign in again to get a fresh one")]
    Expired,
    /// The token has no `exp` (or one that is not a number); tokens that never expire are refused.
    #[error(
        "token has no expiry (`exp`, a number of seconds): tokens must expire; ask the issuer for one that does"
    )]
    MissingExpiry,
    /// `nbf` or `iat` lies in the future (beyond the leeway).
    #[error(
        "token is not valid yet (`nbf` or `iat` is in the future): wait, or check the clocks of the issuer and this server"
    )]
    NotYetValid,
    /// `iss` is missing or is not the configured issuer.
    #[error("token issuer (`iss`) is not the one this server trusts: get a token from that issuer")]
    WrongIssuer,
    /// `aud` is missing or does not name this server, or names an audience where none is configured.
    #[error("token audience (`aud`) does not name this server: ask for a token meant for it")]
    WrongAudience,
    /// A guest token where guests are not allowed.
    #[error("guest tokens are not accepted here: sign in with an account")]
    GuestNotAllowed,
    /// `sub` is missing or is not a usable player id; the reason is fixed text.
    #[error("token subject (`sub`, the player id) is unusable: {0}")]
    BadSubject(&'static str),
    /// The configuration (or a dev-token request) is unusable. For startup and tools only: it
    /// describes the server's setup and never reaches a player except as a generic `INTERNAL`.
    #[error("authentication setup: {0}")]
    Config(String),
}

impl AuthError {
    /// The gRPC status to answer with: `UNAUTHENTICATED` and this error's message for every
    /// token problem; `INTERNAL` with a generic message for [`AuthError::Config`], whose details
    /// are for the operator's log, not for callers.
    pub fn to_status(&self) -> tonic::Status {
        use hidden_front_api_error::{ApiError, Reason};
        let reason = match self {
            AuthError::Config(_) => {
                return ApiError::new(
                    Reason::Internal,
                    "the server's authentication is misconfigured",
                )
                .into();
            }
            AuthError::Missing => Reason::TokenMissing,
            AuthError::Expired | AuthError::NotYetValid => Reason::TokenExpired,
            AuthError::GuestNotAllowed => Reason::GuestNotAllowed,
            _ => Reason::TokenInvalid,
        };
        ApiError::new(reason, self.to_string()).into()
    }
}

/// Verifies bearer tokens against a checked [`AuthConfig`].
///
/// Cheap to clone and share between connections and tasks: the keys live behind an `Arc`.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

/// The prepared keys and policy behind an [`Authenticator`].
struct Inner {
    /// For each accepted algorithm, its claim validation and its keys (in configuration order).
    by_alg: HashMap<Algorithm, Verifier>,
    /// Accepted algorithms in a stable order, for logs.
    algorithms: Vec<&'static str>,
    allow_guest_tokens: bool,
    leeway_seconds: u64,
    uses_dev_secret: bool,
    /// Tokens accepted before, by their exact text ([module docs](self)).
    verified: parking_lot::Mutex<HashMap<Box<str>, Verified>>,
}

/// An accepted token's player and the seconds between which that answer stands without a
/// fresh check: from its `nbf` and `iat` (the later, rounded up) to just before its `exp`
/// (rounded down), no leeway either side.
#[derive(Debug, Clone)]
struct Verified {
    player: Player,
    from: u64,
    until: u64,
}

impl Verified {
    /// The window of `claims` (already accepted), or `None` for an `exp` that is not a number.
    fn of(player: &Player, claims: &Map<String, Value>) -> Option<Verified> {
        let seconds = |name: &str| claims.get(name).and_then(Value::as_f64);
        let until = seconds("exp")
            .filter(|exp| exp.is_finite() && *exp > 0.0)?
            .floor() as u64;
        let from = [seconds("nbf"), seconds("iat")]
            .into_iter()
            .flatten()
            .filter(|t| t.is_finite())
            .fold(0.0_f64, f64::max)
            .ceil() as u64;
        Some(Verified {
            player: player.clone(),
            from,
            until,
        })
    }

    /// Whether the answer stands at `now` (seconds since the epoch).
    fn holds_at(&self, now: u64) -> bool {
        self.from <= now && now < self.until
    }
}

/// Everything needed to check a token of one algorithm.
struct Verifier {
    validation: Validation,
    keys: Vec<DecodingKey>,
}

impl fmt::Debug for Authenticator {
    /// Shows the policy, never a key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("algorithms", &self.inner.algorithms)
            .field("allow_guest_tokens", &self.inner.allow_guest_tokens)
            .field("leeway_seconds", &self.inner.leeway_seconds)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Checks `config` and prepares its keys.
    ///
    /// Refuses, with [`AuthError::Config`]: a configuration without any key; HS256 secrets
    /// shorter than [`MIN_HS256_SECRET_BYTES`]; PEM that is not exactly one public key of the
    /// configured algorithm's kind (private keys and certificates included); RSA keys under
    /// 2048 bits; an empty issuer or audience; a leeway above [`MAX_LEEWAY_SECONDS`].
    pub fn new(config: AuthConfig) -> Result<Authenticator, AuthError> {
        let provider = crypto_provider()?;
        if config.hs256_secrets.is_empty() && config.public_keys_pem.is_empty() {
            return Err(AuthError::Config(
                "no token key configured: give at least one HS256 secret or one public key \
                 (every player would be refused)"
                    .into(),
            ));
        }
        if config.leeway_seconds > MAX_LEEWAY_SECONDS {
            return Err(AuthError::Config(format!(
                "leeway of {} s is above the maximum of {MAX_LEEWAY_SECONDS} s: fix the clocks instead",
                config.leeway_seconds
            )));
        }
        for (what, value) in [("issuer", &config.issuer), ("audience", &config.audience)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(AuthError::Config(format!(
                    "the expected {what} is empty: leave it unset to not check it"
                )));
            }
        }

        let mut keys: Vec<(Algorithm, DecodingKey)> = Vec::new();
        for (index, secret) in config.hs256_secrets.iter().enumerate() {
            if secret.len() < MIN_HS256_SECRET_BYTES {
                return Err(AuthError::Config(format!(
                    "HS256 secret #{} is {} bytes; at least {MIN_HS256_SECRET_BYTES} are needed \
                     (RFC 7518 3.2)",
                    index + 1,
                    secret.len()
                )));
            }
            let key = DecodingKey::from_secret(secret).map_err(|_| {
                AuthError::Config(format!("HS256 secret #{} is unusable", index + 1))
            })?;
            keys.push((Algorithm::HS256, key));
        }
        for (index, (alg, pem)) in config.public_keys_pem.iter().enumerate() {
            let key = public_key(provider, *alg, pem).map_err(|reason| {
                AuthError::Config(format!("public key #{} ({alg}): {reason}", index + 1))
            })?;
            keys.push((alg.jwt(), key));
        }

        let mut by_alg: HashMap<Algorithm, Verifier> = HashMap::new();
        let mut algorithms = Vec::new();
        for (alg, key) in keys {
            let verifier = by_alg.entry(alg).or_insert_with(|| {
                algorithms.push(alg_name(alg));
                Verifier {
                    validation: validation(alg, &config),
                    keys: Vec::new(),
                }
            });
            verifier.keys.push(key);
        }

        Ok(Authenticator {
            inner: Arc::new(Inner {
                by_alg,
                algorithms,
                allow_guest_tokens: config.allow_guest_tokens,
                leeway_seconds: config.leeway_seconds,
                uses_dev_secret: config
                    .hs256_secrets
                    .iter()
                    .any(|secret| secret.as_slice() == DEV_SECRET.as_bytes()),
                verified: parking_lot::Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Whether [`DEV_SECRET`] is among the HS256 secrets, so the binary can say loudly at startup
    /// that anyone can sign tokens for this server.
    pub fn uses_dev_secret(&self) -> bool {
        self.inner.uses_dev_secret
    }

    /// The JOSE names of the accepted algorithms, for the startup log line.
    pub fn algorithms(&self) -> &[&'static str] {
        &self.inner.algorithms
    }

    /// Authenticates the value of an HTTP `authorization` header (or gRPC metadata entry):
    /// `Bearer <jwt>`, the scheme in any ASCII case. `None`, or a blank value, is
    /// [`AuthError::Missing`].
    pub fn authenticate_header(&self, authorization: Option<&str>) -> Result<Player, AuthError> {
        let value = authorization.map(str::trim).unwrap_or_default();
        if value.is_empty() {
            return Err(AuthError::Missing);
        }
        let Some((scheme, rest)) = value.split_once(|c: char| c.is_ascii_whitespace()) else {
            return Err(if value.eq_ignore_ascii_case("bearer") {
                AuthError::Malformed("`Bearer` has no token after it")
            } else {
                AuthError::Malformed("expected `authorization: Bearer <token>`")
            });
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Malformed(
                "only the `Bearer` scheme is accepted: send `authorization: Bearer <token>`",
            ));
        }
        let token = rest.trim();
        if token.contains(|c: char| c.is_whitespace()) {
            return Err(AuthError::Malformed(
                "more than one word after `Bearer`: send exactly one token",
            ));
        }
        self.authenticate_token(token)
    }

    /// Authenticates the `authorization` entry of gRPC request metadata: exactly one must be
    /// there (see [`Authenticator::authenticate_header_values`]).
    pub fn authenticate_metadata(
        &self,
        metadata: &tonic::metadata::MetadataMap,
    ) -> Result<Player, AuthError> {
        self.authenticate_header_values(
            metadata
                .get_all("authorization")
                .iter()
                .map(|value| value.as_bytes()),
        )
    }

    /// Authenticates the raw values of every `authorization` header of one request (HTTP headers
    /// or gRPC metadata, in any order). None is [`AuthError::Missing`]; more than one is
    /// [`AuthError::MoreThanOneHeader`], whatever they hold, so which one counts never depends on
    /// who reads them; a value that is not visible ASCII is told apart from a missing one.
    pub fn authenticate_header_values<'a>(
        &self,
        values: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Player, AuthError> {
        let mut values = values.into_iter();
        let Some(value) = values.next() else {
            return Err(AuthError::Missing);
        };
        if values.next().is_some() {
            return Err(AuthError::MoreThanOneHeader);
        }
        // The bytes `HeaderValue::to_str` accepts: visible ASCII, space and tab.
        let text = value
            .iter()
            .all(|b| *b == b'\t' || (0x20..0x7f).contains(b))
            .then(|| std::str::from_utf8(value).ok())
            .flatten()
            .ok_or(AuthError::Malformed(
                "the `authorization` value is not plain ASCII",
            ))?;
        self.authenticate_header(Some(text))
    }

    /// Authenticates a bare JWT (for transports that cannot send headers, such as a browser's
    /// WebSocket handshake).
    pub fn authenticate_token(&self, token: &str) -> Result<Player, AuthError> {
        let token = token.trim();
        if let Some(known) = self.inner.verified.lock().get(token)
            && known.holds_at(now_seconds())
        {
            return Ok(known.player.clone());
        }
        let (player, claims) = self.verify(token)?;
        if let Some(verified) = Verified::of(&player, &claims)
            && verified.holds_at(now_seconds())
        {
            let mut known = self.inner.verified.lock();
            if known.len() >= MAX_VERIFIED_TOKENS {
                known.clear();
            }
            known.insert(token.into(), verified);
        }
        Ok(player)
    }

    /// Tokens remembered as verified now.
    pub fn verified_tokens(&self) -> usize {
        self.inner.verified.lock().len()
    }

    /// The full check of a token: shape, header, signature, claims. The player and the claims.
    fn verify(&self, token: &str) -> Result<(Player, Map<String, Value>), AuthError> {
        check_token_shape(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            AuthError::Malformed(
                "the token header is unreadable, or names no known algorithm (`none` is never \
                 accepted)",
            )
        })?;
        let verifier = self
            .inner
            .by_alg
            .get(&header.alg)
            .ok_or(AuthError::AlgorithmNotAccepted(alg_name(header.alg)))?;

        let mut claims = None;
        for key in &verifier.keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &verifier.validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                // Another key of the same algorithm may still verify it (rotation).
                Err(error) if matches!(error.kind(), ErrorKind::InvalidSignature) => continue,
                Err(error) => return Err(from_jwt_error(error.kind())),
            }
        }
        let claims = claims.ok_or(AuthError::BadSignature)?;
        let player = self.player(&claims)?;
        Ok((player, claims))
    }

    /// The checks `jsonwebtoken` does not make: `iat`, `sub`, `guest`.
    fn player(&self, claims: &Map<String, Value>) -> Result<Player, AuthError> {
        match claims.get("iat") {
            None => {}
            Some(iat) => {
                let iat =
                    iat.as_f64()
                        .filter(|iat| iat.is_finite())
                        .ok_or(AuthError::Malformed(
                            "claim `iat` must be a number of seconds",
                        ))?;
                if iat > (now_seconds().saturating_add(self.inner.leeway_seconds)) as f64 {
                    return Err(AuthError::NotYetValid);
                }
            }
        }
        let id = match claims.get("sub") {
            None | Some(Value::Null) => return Err(AuthError::BadSubject("it is missing")),
            Some(Value::String(sub)) => sub,
            Some(_) => return Err(AuthError::BadSubject("it is not a string")),
        };
        check_subject(id)?;
        let guest = match claims.get("guest") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(guest)) => *guest,
            Some(_) => {
                return Err(AuthError::Malformed("claim `guest` must be true or false"));
            }
        };
        if guest && !self.inner.allow_guest_tokens {
            return Err(AuthError::GuestNotAllowed);
        }
        let bot = match claims.get("bot") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(bot)) => *bot,
            Some(_) => {
                return Err(AuthError::Malformed("claim `bot` must be true or false"));
            }
        };
        Ok(Player {
            id: id.clone(),
            guest,
            bot,
        })
    }
}

/// Mints an HS256 token for `player` valid for `ttl`, with `sub`, `iat`, `exp` and, for a
/// guest, `"guest": true`: what a platform's sign-in service would issue, so the one-box setup,
/// tests and `hidden-front token` can play without one.
///
/// Refuses secrets shorter than [`MIN_HS256_SECRET_BYTES`], a `ttl` under one second, and a
/// player id the gateway would refuse.
pub fn mint_dev_token(
    secret: &[u8],
    player: &str,
    ttl: Duration,
    guest: bool,
) -> Result<String, AuthError> {
    /// The claims of a dev token.
    #[derive(Serialize)]
    struct DevClaims<'a> {
        sub: &'a str,
        iat: u64,
        exp: u64,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        guest: bool,
    }

    crypto_provider()?;
    if secret.len() < MIN_HS256_SECRET_BYTES {
        return Err(AuthError::Config(format!(
            "the secret is {} bytes; at least {MIN_HS256_SECRET_BYTES} are needed",
            secret.len()
        )));
    }
    if ttl < Duration::from_secs(1) {
        return Err(AuthError::Config(
            "the lifetime must be at least one second".into(),
        ));
    }
    check_subject(player)?;
    let now = now_seconds();
    let claims = DevClaims {
        sub: player,
        iat: now,
        exp: now.saturating_add(ttl.as_secs()),
        guest,
    };
    let key = EncodingKey::from_secret(secret)
        .map_err(|_| AuthError::Config("the secret is unusable".into()))?;
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key)
        .map_err(|_| AuthError::Config("signing the token failed".into()))
}

/// A token this gateway signs itself: a guest's, from `POST /v1/guest` (see [`crate::http`]).
#[derive(Serialize)]
pub(crate) struct GuestClaims<'a> {
    pub(crate) sub: &'a str,
    pub(crate) iat: u64,
    pub(crate) exp: u64,
    pub(crate) guest: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) iss: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) aud: Option<&'a str>,
}

/// Signs `claims` with HS256 under `secret`, after the same checks as [`mint_dev_token`]
/// (secret length, subject rules).
pub(crate) fn sign_guest(secret: &[u8], claims: &GuestClaims<'_>) -> Result<String, AuthError> {
    crypto_provider()?;
    if secret.len() < MIN_HS256_SECRET_BYTES {
        return Err(AuthError::Config(format!(
            "the secret is {} bytes; at least {MIN_HS256_SECRET_BYTES} are needed",
            secret.len()
        )));
    }
    check_subject(claims.sub)?;
    let key = EncodingKey::from_secret(secret)
        .map_err(|_| AuthError::Config("the secret is unusable".into()))?;
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key)
        .map_err(|_| AuthError::Config("signing the token failed".into()))
}

/// The process's `jsonwebtoken` crypto backend. With exactly one backend feature enabled the
/// crate picks it itself; should feature unification ever enable both, this installs the
/// pure-Rust one instead of letting the first `decode` panic.
fn crypto_provider() -> Result<&'static CryptoProvider, AuthError> {
    if let Some(provider) = CryptoProvider::try_get_default() {
        return Ok(provider);
    }
    // Losing a race with another installer is fine: any installed provider will do.
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    CryptoProvider::try_get_default().ok_or_else(|| {
        AuthError::Config("no jsonwebtoken crypto backend could be installed".into())
    })
}

/// The claim validation for tokens of `alg`: `exp` required, `nbf` checked, issuer and audience
/// required and checked when configured.
fn validation(alg: Algorithm, config: &AuthConfig) -> Validation {
    let mut validation = Validation::new(alg);
    validation.leeway = config.leeway_seconds;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = true;
    let mut required = vec!["exp"];
    if let Some(issuer) = &config.issuer {
        validation.set_issuer(&[issuer]);
        required.push("iss");
    }
    if let Some(audience) = &config.audience {
        validation.set_audience(&[audience]);
        required.push("aud");
    }
    validation.set_required_spec_claims(&required);
    validation
}

/// Parses and checks one configured public key; the error is the reason, for a config message.
fn public_key(
    provider: &CryptoProvider,
    alg: PublicKeyAlgorithm,
    pem: &str,
) -> Result<DecodingKey, String> {
    use PublicKeyAlgorithm as A;

    let labels: Vec<&str> = pem
        .lines()
        .filter_map(|line| line.trim().strip_prefix("-----BEGIN "))
        .map(|rest| rest.trim_end_matches('-').trim())
        .collect();
    let is_rsa = matches!(
        alg,
        A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512
    );
    match labels.as_slice() {
        [] => return Err("no PEM block (`-----BEGIN PUBLIC KEY-----`) found".into()),
        ["PUBLIC KEY"] => {}
        ["RSA PUBLIC KEY"] if is_rsa => {}
        [label] if label.contains("PRIVATE") => {
            return Err("this is a private key; configure the issuer's public key \
                        (`openssl pkey -pubout`): the gateway only verifies"
                .into());
        }
        [label] if label.contains("CERTIFICATE") => {
            return Err("certificates are not accepted; give the public key \
                        (`openssl x509 -pubkey -noout`)"
                .into());
        }
        [_] => return Err("expected a `PUBLIC KEY` PEM block".into()),
        _ => return Err("more than one PEM block: configure each key separately".into()),
    }

    let parsed = match alg {
        A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => {
            DecodingKey::from_rsa_pem(pem.as_bytes())
        }
        A::ES256 | A::ES384 => DecodingKey::from_ec_pem(pem.as_bytes()),
        A::EdDSA => DecodingKey::from_ed_pem(pem.as_bytes()),
    };
    let key = parsed.map_err(|_| format!("not a {} public key in PEM form", family_name(alg)))?;
    let der = key
        .try_get_as_bytes()
        .map_err(|_| format!("not a {} public key", family_name(alg)))?;
    if is_rsa {
        let (modulus, _) = (provider.key_utils.rsa_pub_components_from_public_key)(der)
            .map_err(|_| "not a valid RSA public key".to_string())?;
        let significant = modulus.iter().skip_while(|byte| **byte == 0).count();
        if significant * 8 < MIN_RSA_BITS {
            return Err(format!(
                "RSA key is shorter than {MIN_RSA_BITS} bits; too weak to trust"
            ));
        }
    }
    // Ed25519 public keys are 32 bytes; checked before the backend, which slices them blindly.
    if alg == A::EdDSA && der.len() != 32 {
        return Err("not an Ed25519 public key".into());
    }
    // The backend parses EC and Ed keys (and checks the curve) when making a verifier.
    (provider.verifier_factory)(&alg.jwt(), &key)
        .map_err(|_| format!("not a usable {} key", alg.as_str()))?;
    Ok(key)
}

/// A person's name for the kind of key `alg` needs.
fn family_name(alg: PublicKeyAlgorithm) -> &'static str {
    match alg {
        PublicKeyAlgorithm::ES256 => "P-256 EC",
        PublicKeyAlgorithm::ES384 => "P-384 EC",
        PublicKeyAlgorithm::EdDSA => "Ed25519",
        _ => "RSA",
    }
}

/// Cheap checks before any decoding: size, alphabet, and three parts (a JWS, not a JWE).
fn check_token_shape(token: &str) -> Result<(), AuthError> {
    if token.is_empty() {
        return Err(AuthError::Missing);
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Malformed(
            "the token is too long to be one this server accepts",
        ));
    }
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(AuthError::Malformed(
            "the token has characters a JWT never has (it must be base64url parts joined by dots)",
        ));
    }
    match token.bytes().filter(|b| *b == b'.').count() {
        2 => Ok(()),
        4 => Err(AuthError::Malformed(
            "encrypted tokens (JWE) are not accepted: send a signed JWT",
        )),
        _ => Err(AuthError::Malformed(
            "not a JWT: expected three dot-separated parts",
        )),
    }
}

/// The player-id rules: present, at most [`MAX_SUBJECT_BYTES`], no surrounding whitespace, no
/// control or invisible formatting characters.
fn check_subject(id: &str) -> Result<(), AuthError> {
    if id.is_empty() {
        return Err(AuthError::BadSubject("it is empty"));
    }
    if id.len() > MAX_SUBJECT_BYTES {
        return Err(AuthError::BadSubject("it is longer than 128 bytes"));
    }
    if id.trim() != id {
        return Err(AuthError::BadSubject("it starts or ends with whitespace"));
    }
    if id.chars().any(|c| c.is_control() || is_invisible_format(c)) {
        return Err(AuthError::BadSubject(
            "it contains control or invisible characters",
        ));
    }
    Ok(())
}

/// Unicode format characters that make ids look like others or reorder text in logs: zero-width
/// characters, bidirectional controls, the byte-order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Maps a `jsonwebtoken` failure to what the caller is told, without any of the library's own
/// messages (JSON errors can quote the token's content).
fn from_jwt_error(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
        ErrorKind::InvalidAudience => AuthError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => match claim.as_str() {
            "exp" => AuthError::MissingExpiry,
            "iss" => AuthError::WrongIssuer,
            "aud" => AuthError::WrongAudience,
            "sub" => AuthError::BadSubject("it is missing"),
            _ => AuthError::Malformed("a required claim is missing"),
        },
        ErrorKind::InvalidClaimFormat(claim) => AuthError::Malformed(match claim.as_str() {
            "exp" => "claim `exp` must be a number of seconds",
            "nbf" => "claim `nbf` must be a number of seconds",
            "iss" => "claim `iss` must be a string",
            "aud" => "claim `aud` must be a string or a list of strings",
            "sub" => "claim `sub` must be a string",
            _ => "a claim has the wrong type",
        }),
        ErrorKind::InvalidAlgorithm => {
            AuthError::Malformed("the token's algorithm does not match the key it claims")
        }
        ErrorKind::InvalidToken => AuthError::Malformed(
            "not a JWT this server can read (bad header or unsupported critical extension)",
        ),
        ErrorKind::Base64(_) => AuthError::Malformed("a part of the token is not valid base64url"),
        ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
            AuthError::Malformed("the token's claims are not a JSON object")
        }
        // Key and backend errors: keys were checked at startup, so treat what is left as a
        // signature that cannot be verified.
        _ => AuthError::BadSignature,
    }
}

/// The JOSE name of a `jsonwebtoken` algorithm.
fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::EdDSA => "EdDSA",
        _ => "an unsupported algorithm",
    }
}

/// Seconds since the Unix epoch (0 for a clock before it, which then fails `exp` safely).
fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(claims: Value) -> Option<Verified> {
        let player = Player {
            id: "p".into(),
            guest: false,
            bot: false,
        };
        Verified::of(&player, claims.as_object().expect("an object"))
    }

    #[test]
    fn a_remembered_answer_holds_only_inside_the_tokens_own_times() {
        let verified =
            window(serde_json::json!({ "nbf": 10, "iat": 9.5, "exp": 20.7 })).expect("a window");
        assert_eq!((verified.from, verified.until), (10, 20));
        assert!(!verified.holds_at(9));
        assert!(verified.holds_at(10));
        assert!(verified.holds_at(19));
        // From `exp` on (leeway or not), only the full check answers.
        assert!(!verified.holds_at(20));
        assert!(!verified.holds_at(21));
        // `iat` in a fraction of a second: from the next whole second.
        let verified = window(serde_json::json!({ "iat": 11.2, "exp": 30 })).expect("a window");
        assert_eq!(verified.from, 12);
        assert!(window(serde_json::json!({ "iat": 11 })).is_none());
        assert!(window(serde_json::json!({ "exp": "soon" })).is_none());
    }
}
