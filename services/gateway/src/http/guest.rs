//! `POST /v1/guest`: one click to a guest identity, where guests are allowed.
//!
//! The gateway mints a guest token (`"guest": true`, subject `guest-` and 10 random characters,
//! a short lifetime) only when it both accepts guest tokens and holds an HS256 secret to sign
//! with ([`GuestConfig::from_auth`]): the one-box setup, with its development secret. Anywhere
//! else (guests refused, or only public keys, so the platform signs) the route answers
//! `404` with reason `GUESTS_NOT_ALLOWED`, and the platform hands the page its token instead.
//!
//! Minting is rate-limited per client address (GCRA through `governor`, IPv6 clients by their
//! /64, idle keys swept), so the endpoint cannot be used to mint tokens in bulk: past the
//! allowance the answer is `429` with `Retry-After` and reason `RATE_LIMITED`. A token is never
//! logged.

use super::{GUEST_PATH, json_response, refusal};
use crate::auth::{AuthConfig, GuestClaims, sign_guest};
use crate::gateway::Gateway;
use crate::limits::KeyedLimiter;
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use governor::Quota;
use governor::clock::{Clock, DefaultClock};
use hidden_front_api_error::Reason;
use serde_json::json;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Default lifetime of a guest token: an evening of play; the page asks again after that.
pub const DEFAULT_GUEST_TTL: Duration = Duration::from_secs(12 * 3600);

/// Default sustained guest tokens per client address per minute.
pub const DEFAULT_GUESTS_PER_MINUTE: u32 = 10;

/// Default burst of guest tokens per client address (a household or a test run behind one
/// address signs in several people at once).
pub const DEFAULT_GUEST_BURST: u32 = 20;

/// Random characters after `guest-` (an alphabet of 32: 50 bits).
pub const GUEST_ID_CHARS: usize = 10;

/// The guest id's alphabet: lower-case letters and digits without the look-alikes 0, 1, l, o.
const ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";

/// Whether and how the gateway mints guest tokens.
#[derive(Clone)]
pub struct GuestConfig {
    signer: Option<Signer>,
    /// Lifetime of a minted token.
    ttl: Duration,
    /// Tokens per client address per minute, sustained.
    per_minute: u32,
    /// Tokens one client address may take at once.
    burst: u32,
}

/// What a guest token is signed with and must carry to pass this gateway's own checks.
#[derive(Clone)]
struct Signer {
    secret: Vec<u8>,
    issuer: Option<String>,
    audience: Option<String>,
}

impl GuestConfig {
    /// Mints nothing: every request is answered `GUESTS_NOT_ALLOWED`.
    pub fn disabled() -> GuestConfig {
        GuestConfig {
            signer: None,
            ttl: DEFAULT_GUEST_TTL,
            per_minute: DEFAULT_GUESTS_PER_MINUTE,
            burst: DEFAULT_GUEST_BURST,
        }
    }

    /// Mints when `auth` accepts guest tokens and has an HS256 secret (signed with the first,
    /// the current one of a rotation), with `auth`'s issuer and audience so the tokens pass its
    /// checks; otherwise [`GuestConfig::disabled`]. Default lifetime and rates.
    pub fn from_auth(auth: &AuthConfig) -> GuestConfig {
        let signer = auth
            .hs256_secrets
            .first()
            .filter(|_| auth.allow_guest_tokens)
            .map(|secret| Signer {
                secret: secret.clone(),
                issuer: auth.issuer.clone(),
                audience: auth.audience.clone(),
            });
        GuestConfig {
            signer,
            ..GuestConfig::disabled()
        }
    }

    /// The same policy allowing each client address `burst` tokens at once and `per_minute`
    /// sustained (each at least 1).
    pub fn with_rate(self, per_minute: u32, burst: u32) -> GuestConfig {
        GuestConfig {
            per_minute: per_minute.max(1),
            burst: burst.max(1),
            ..self
        }
    }

    /// The same policy minting tokens valid for `ttl` (at least one second).
    pub fn with_ttl(self, ttl: Duration) -> GuestConfig {
        GuestConfig {
            ttl: ttl.max(Duration::from_secs(1)),
            ..self
        }
    }

    /// Whether `POST /v1/guest` mints tokens.
    pub fn mints(&self) -> bool {
        self.signer.is_some()
    }
}

impl fmt::Debug for GuestConfig {
    /// The policy, never the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuestConfig")
            .field("mints", &self.mints())
            .field("ttl", &self.ttl)
            .field("per_minute", &self.per_minute)
            .field("burst", &self.burst)
            .finish()
    }
}

/// The endpoint's state.
struct Guests {
    config: GuestConfig,
    limiter: AddressLimiter,
    gateway: Gateway,
}

/// `POST /v1/guest` and nothing else.
pub(super) fn routes(config: GuestConfig, gateway: Gateway) -> Router {
    let limiter = AddressLimiter::new(config.per_minute, config.burst, DefaultClock::default());
    let state = Arc::new(Guests {
        config,
        limiter,
        gateway,
    });
    Router::new()
        .route(GUEST_PATH, post(mint))
        .with_state(state)
}

/// Mints one guest token for the caller, or refuses.
async fn mint(State(guests): State<Arc<Guests>>, request: Request) -> Response {
    let Some(signer) = &guests.config.signer else {
        return refusal(
            Reason::GuestsNotAllowed,
            "this server does not hand out guest identities: sign in through the platform, \
             which gives the page its token",
        );
    };
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    if let Err(wait) = guests.limiter.check(address) {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        tracing::debug!(retry_after_s = seconds, "guest sign-in rate-limited");
        let mut response = refusal(
            Reason::RateLimited,
            &format!(
                "too many guest sign-ins from this address (at most {} a minute); retry in {seconds} s",
                guests.config.per_minute
            ),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return response;
    }
    let player = guest_id();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let exp = now
        .as_secs()
        .saturating_add(guests.config.ttl.as_secs().max(1));
    let claims = GuestClaims {
        sub: &player,
        iat: now.as_secs(),
        exp,
        guest: true,
        iss: signer.issuer.as_deref(),
        aud: signer.audience.as_deref(),
    };
    // A token this gateway would refuse is never handed out (a misconfiguration shows here).
    let token = match sign_guest(&signer.secret, &claims) {
        Ok(token) => token,
        Err(error) => {
            tracing::error!(%error, "minting a guest token failed");
            return refusal(Reason::Internal, "minting a guest token failed");
        }
    };
    if let Err(status) = guests.gateway.authenticate_token(&token) {
        tracing::error!(
            message = status.message(),
            "this gateway refuses its own guest token"
        );
        return refusal(Reason::Internal, "minting a guest token failed");
    }
    tracing::info!(player = %player, "guest token minted");
    let mut response = json_response(
        StatusCode::OK,
        json!({
            "token": token,
            "player": player,
            "expiresAtUnixMillis": exp.saturating_mul(1000),
        }),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-store, private"),
    );
    response.into_response()
}

/// `guest-` and [`GUEST_ID_CHARS`] random characters of [`ALPHABET`] (from the OS's random
/// source, through a v4 UUID's random bytes; 32 divides 256, so each is uniform).
fn guest_id() -> String {
    let random = uuid::Uuid::new_v4().into_bytes();
    let mut id = String::with_capacity(6 + GUEST_ID_CHARS);
    id.push_str("guest-");
    // A v4 UUID's bytes 6 and 8 hold version and variant bits: take the others.
    for byte in random
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 6 && *i != 8)
        .map(|(_, b)| *b)
        .take(GUEST_ID_CHARS)
    {
        id.push(char::from(ALPHABET[usize::from(byte) % ALPHABET.len()]));
    }
    id
}

/// The rate-limit key of a client: its IPv4 address, or its IPv6 /64 (one host's share of
/// addresses; a single machine can hold a whole /64). An unknown address is one shared key.
fn address_key(address: Option<IpAddr>) -> IpAddr {
    match address {
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Some(IpAddr::V4(v4)) => IpAddr::V4(v4),
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(bits))
            }
        },
    }
}

/// Guest sign-ins per client address (IPv6 by /64, [`address_key`]): `burst` at once, refilled
/// at `per_minute`, on the gateway's one [`KeyedLimiter`] (idle keys swept, bounded memory).
struct AddressLimiter<C: Clock = DefaultClock> {
    limiter: KeyedLimiter<IpAddr, C>,
}

impl<C: Clock + Clone> AddressLimiter<C> {
    fn new(per_minute: u32, burst: u32, clock: C) -> AddressLimiter<C> {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_minute(per_minute).allow_burst(burst);
        AddressLimiter {
            limiter: KeyedLimiter::new(quota, clock),
        }
    }

    /// Takes one sign-in of `address`'s allowance, or says how long until the next one.
    fn check(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        self.limiter.check(&address_key(address))
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.limiter.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[test]
    fn guest_ids_are_guest_and_ten_characters_of_the_alphabet() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let id = guest_id();
            let tail = id.strip_prefix("guest-").expect("prefixed");
            assert_eq!(tail.len(), GUEST_ID_CHARS);
            assert!(tail.bytes().all(|b| ALPHABET.contains(&b)), "{id}");
            assert!(seen.insert(id), "ids do not repeat");
        }
        let used: std::collections::HashSet<char> =
            seen.iter().flat_map(|id| id[6..].chars()).collect();
        assert_eq!(used.len(), 32, "every character of the alphabet shows up");
    }

    #[test]
    fn addresses_are_keyed_by_host_and_ipv6_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(Some(a)), address_key(Some(b)));
        assert_ne!(address_key(Some(a)), address_key(Some(c)));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(address_key(Some(mapped)), address_key(Some(v4)));
        assert_ne!(
            address_key(Some(v4)),
            address_key(Some("192.0.2.8".parse().unwrap()))
        );
    }

    #[test]
    fn each_address_gets_its_burst_then_waits_for_the_refill() {
        let clock = FakeRelativeClock::default();
        let limiter = AddressLimiter::new(6, 3, clock.clone());
        let one = Some("192.0.2.1".parse().unwrap());
        let two = Some("192.0.2.2".parse().unwrap());
        for _ in 0..3 {
            assert!(limiter.check(one).is_ok());
        }
        let wait = limiter.check(one).expect_err("past the burst");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(10),
            "one token every 10 s: {wait:?}"
        );
        assert!(limiter.check(two).is_ok(), "another address is not held up");
        clock.advance(Duration::from_secs(10));
        assert!(limiter.check(one).is_ok(), "refilled");
        assert!(limiter.check(one).is_err());
    }

    #[test]
    fn idle_addresses_are_swept() {
        let clock = FakeRelativeClock::default();
        let limiter = AddressLimiter::new(60, 1, clock.clone());
        for i in 0..2000u32 {
            let _ = limiter.check(Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))));
            clock.advance(Duration::from_millis(10));
        }
        assert!(
            limiter.keys() < 1024 + 200,
            "idle keys are dropped: {}",
            limiter.keys()
        );
    }
}
