//! Standard Webhooks signatures (<https://www.standardwebhooks.com>, spec v1): what a delivery
//! carries so a consumer can tell it came from us and was not changed or replayed late.
//!
//! A delivery has three headers: `webhook-id` (the fact's id, the same on every retry),
//! `webhook-timestamp` (unix seconds of this attempt) and `webhook-signature`, a space-separated
//! list of `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, one per active secret, so
//! a secret can be rotated without a moment in which consumers refuse deliveries. Secrets are
//! written `whsec_<base64 key>`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The header naming the message (our fact id).
pub const ID_HEADER: &str = "webhook-id";
/// The header with the attempt's unix seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header with the signatures.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// The prefix of a secret's text form.
pub const SECRET_PREFIX: &str = "whsec_";
/// How far a timestamp may be from the verifier's clock, the spec's recommendation.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// One signing key. Its `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    key: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Why a secret's text is not a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// It does not start with `whsec_`.
    #[error("a webhook secret starts with \"whsec_\" followed by base64 (like whsec_MfKQ9r8G...)")]
    MissingPrefix,
    /// The part after the prefix is not base64.
    #[error("the part after \"whsec_\" is not standard base64: {0}")]
    NotBase64(String),
    /// The key is too short to be a secret.
    #[error("the key is {0} bytes; a webhook secret needs at least 24 (the spec uses 24 to 64)")]
    TooShort(usize),
}

impl Secret {
    /// The smallest key accepted, so a typo cannot configure a guessable secret.
    pub const MIN_KEY_BYTES: usize = 24;

    /// Reads `whsec_<base64>`.
    pub fn parse(text: &str) -> Result<Secret, SecretError> {
        let encoded = text
            .trim()
            .strip_prefix(SECRET_PREFIX)
            .ok_or(SecretError::MissingPrefix)?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|e| SecretError::NotBase64(e.to_string()))?;
        if key.len() < Secret::MIN_KEY_BYTES {
            return Err(SecretError::TooShort(key.len()));
        }
        Ok(Secret { key })
    }

    /// `v1,<base64 signature>` of one message under this key.
    pub fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        format!("v1,{}", STANDARD.encode(self.mac(id, timestamp, body)))
    }

    fn mac(&self, id: &str, timestamp: u64, body: &[u8]) -> Vec<u8> {
        // HMAC takes a key of any length; this cannot fail.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.finalize().into_bytes().to_vec()
    }

    fn matches(&self, id: &str, timestamp: u64, body: &[u8], signature: &[u8]) -> bool {
        let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(&self.key) else {
            return false;
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        // Constant-time comparison.
        mac.verify_slice(signature).is_ok()
    }
}

/// The `webhook-signature` value: one `v1,...` per secret, space-separated.
pub fn signature_header(secrets: &[Secret], id: &str, timestamp: u64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|secret| secret.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Unix seconds of `at`.
pub fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// Why a delivery does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A required header is absent or not text.
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    /// `webhook-timestamp` is not unix seconds.
    #[error("the webhook-timestamp header is not unix seconds")]
    BadTimestamp,
    /// The timestamp is further from now than the tolerance (a late replay or a wrong clock).
    #[error("the webhook-timestamp is {0} s away from now, more than the tolerance")]
    StaleTimestamp(u64),
    /// No `v1` signature matched any of the secrets.
    #[error("no signature matches (tampered body, wrong secret, or not signed by us)")]
    NoMatch,
}

/// Verifies a delivery against `secrets` (any one matching is enough, so consumers can rotate
/// too): the headers are present, the timestamp is within `tolerance` of the system clock, and
/// some `v1` signature is the HMAC of `{id}.{timestamp}.{body}`.
pub fn verify(
    secrets: &[Secret],
    headers: &http::HeaderMap,
    body: &[u8],
    tolerance: Duration,
) -> Result<(), VerifyError> {
    verify_at(secrets, headers, body, tolerance, SystemTime::now())
}

/// [`verify`] as of `now`.
pub fn verify_at(
    secrets: &[Secret],
    headers: &http::HeaderMap,
    body: &[u8],
    tolerance: Duration,
    now: SystemTime,
) -> Result<(), VerifyError> {
    let header = |name: &'static str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or(VerifyError::MissingHeader(name))
    };
    let id = header(ID_HEADER)?;
    let timestamp: u64 = header(TIMESTAMP_HEADER)?
        .trim()
        .parse()
        .map_err(|_| VerifyError::BadTimestamp)?;
    let signatures = header(SIGNATURE_HEADER)?;
    let skew = unix_seconds(now).abs_diff(timestamp);
    if skew > tolerance.as_secs() {
        return Err(VerifyError::StaleTimestamp(skew));
    }
    let matched = signatures
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|encoded| STANDARD.decode(encoded).ok())
        .any(|signature| {
            secrets
                .iter()
                .any(|secret| secret.matches(id, timestamp, body, &signature))
        });
    match matched {
        true => Ok(()),
        false => Err(VerifyError::NoMatch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SPEC_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const SPEC_TIMESTAMP: u64 = 1_614_265_330;
    const SPEC_BODY: &str = r#"{"test": 2432232314}"#;
    const SPEC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn other_secret() -> Secret {
        Secret::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).unwrap()
    }

    fn headers(id: &str, timestamp: u64, signature: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(ID_HEADER, id.parse().unwrap());
        headers.insert(TIMESTAMP_HEADER, timestamp.to_string().parse().unwrap());
        headers.insert(SIGNATURE_HEADER, signature.parse().unwrap());
        headers
    }

    fn at(timestamp: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(timestamp)
    }

    #[test]
    fn signs_the_specs_published_example() {
        let secret = Secret::parse(SPEC_SECRET).unwrap();
        assert_eq!(
            secret.sign(SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY.as_bytes()),
            SPEC_SIGNATURE
        );
    }

    #[test]
    fn verifies_a_good_delivery_and_refuses_a_tampered_body_or_a_wrong_secret() {
        let secret = Secret::parse(SPEC_SECRET).unwrap();
        let good = headers(SPEC_ID, SPEC_TIMESTAMP, SPEC_SIGNATURE);
        let now = at(SPEC_TIMESTAMP + 10);
        verify_at(
            std::slice::from_ref(&secret),
            &good,
            SPEC_BODY.as_bytes(),
            DEFAULT_TOLERANCE,
            now,
        )
        .unwrap();
        assert_eq!(
            verify_at(
                std::slice::from_ref(&secret),
                &good,
                br#"{"test": 2432232315}"#,
                DEFAULT_TOLERANCE,
                now
            ),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            verify_at(
                &[other_secret()],
                &good,
                SPEC_BODY.as_bytes(),
                DEFAULT_TOLERANCE,
                now
            ),
            Err(VerifyError::NoMatch)
        );
        // The id is signed too.
        let other_id = headers("msg_other", SPEC_TIMESTAMP, SPEC_SIGNATURE);
        assert_eq!(
            verify_at(
                &[secret],
                &other_id,
                SPEC_BODY.as_bytes(),
                DEFAULT_TOLERANCE,
                now
            ),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn rotation_signs_with_every_secret_and_either_verifies() {
        let old = Secret::parse(SPEC_SECRET).unwrap();
        let new = other_secret();
        let header = signature_header(
            &[old.clone(), new.clone()],
            SPEC_ID,
            SPEC_TIMESTAMP,
            SPEC_BODY.as_bytes(),
        );
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], SPEC_SIGNATURE);
        let delivered = headers(SPEC_ID, SPEC_TIMESTAMP, &header);
        let now = at(SPEC_TIMESTAMP);
        for consumer in [vec![old.clone()], vec![new.clone()], vec![new, old]] {
            verify_at(
                &consumer,
                &delivered,
                SPEC_BODY.as_bytes(),
                DEFAULT_TOLERANCE,
                now,
            )
            .unwrap();
        }
    }

    #[test]
    fn refuses_a_stale_or_future_timestamp_and_missing_headers() {
        let secret = Secret::parse(SPEC_SECRET).unwrap();
        let good = headers(SPEC_ID, SPEC_TIMESTAMP, SPEC_SIGNATURE);
        for now in [SPEC_TIMESTAMP + 301, SPEC_TIMESTAMP - 301] {
            assert!(matches!(
                verify_at(
                    std::slice::from_ref(&secret),
                    &good,
                    SPEC_BODY.as_bytes(),
                    DEFAULT_TOLERANCE,
                    at(now)
                ),
                Err(VerifyError::StaleTimestamp(301))
            ));
        }
        let mut missing = good.clone();
        missing.remove(SIGNATURE_HEADER);
        assert_eq!(
            verify_at(
                std::slice::from_ref(&secret),
                &missing,
                SPEC_BODY.as_bytes(),
                DEFAULT_TOLERANCE,
                at(SPEC_TIMESTAMP)
            ),
            Err(VerifyError::MissingHeader(SIGNATURE_HEADER))
        );
        let mut garbled = good;
        garbled.insert(TIMESTAMP_HEADER, "yesterday".parse().unwrap());
        assert_eq!(
            verify_at(
                &[secret],
                &garbled,
                SPEC_BODY.as_bytes(),
                DEFAULT_TOLERANCE,
                at(SPEC_TIMESTAMP)
            ),
            Err(VerifyError::BadTimestamp)
        );
    }

    #[test]
    fn secret_text_is_checked_and_never_shown() {
        assert_eq!(
            Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(SecretError::MissingPrefix)
        );
        assert!(matches!(
            Secret::parse("whsec_not base64!"),
            Err(SecretError::NotBase64(_))
        ));
        assert_eq!(
            Secret::parse("whsec_c2hvcnQ="),
            Err(SecretError::TooShort(5))
        );
        let secret = Secret::parse(SPEC_SECRET).unwrap();
        assert!(!format!("{secret:?}").contains("MfKQ"));
    }
}
