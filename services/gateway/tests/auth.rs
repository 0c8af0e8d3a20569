//! Bearer-token authentication: every rule of `hidden_front_gateway::auth`, each shown both
//! accepting what it should and refusing what it should, with the messages callers see.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hidden_front_gateway::auth::{
    AuthConfig, AuthError, Authenticator, DEV_SECRET, MAX_SUBJECT_BYTES, MAX_TOKEN_BYTES, Player,
    PublicKeyAlgorithm, mint_dev_token,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tonic::Code;

const RSA_PRIVATE: &str = include_str!("fixtures/rsa_private.pem");
const RSA_PUBLIC: &str = include_str!("fixtures/rsa_public.pem");
const RSA_OTHER_PRIVATE: &str = include_str!("fixtures/rsa_other_private.pem");
const RSA_WEAK_PUBLIC: &str = include_str!("fixtures/rsa_weak_1024_public.pem");
const ED_PRIVATE: &str = include_str!("fixtures/ed25519_private.pem");
const ED_PUBLIC: &str = include_str!("fixtures/ed25519_public.pem");
const EC_PRIVATE: &str = include_str!("fixtures/ec_p256_private.pem");
const EC_PUBLIC: &str = include_str!("fixtures/ec_p256_public.pem");

const SECRET: &[u8] = b"a-test-secret-that-is-long-enough-0123456789";
const OTHER_SECRET: &[u8] = b"another-test-secret-long-enough-9876543210";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Claims of a valid token for `sub`, valid for an hour.
fn claims(sub: &str) -> Value {
    json!({ "sub": sub, "iat": now(), "exp": now() + 3600 })
}

/// `claims` with `key` changed (or removed, for `Value::Null`).
fn with(mut claims: Value, key: &str, value: Value) -> Value {
    let map = claims.as_object_mut().unwrap();
    if value.is_null() {
        map.remove(key);
    } else {
        map.insert(key.to_string(), value);
    }
    claims
}

fn hs256(secret: &[u8], claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret).unwrap(),
    )
    .unwrap()
}

fn rs256(private_pem: &str, claims: &Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        claims,
        &EncodingKey::from_rsa_pem(private_pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn hs_config() -> AuthConfig {
    AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        ..AuthConfig::default()
    }
}

fn rsa_config() -> AuthConfig {
    AuthConfig {
        public_keys_pem: vec![(PublicKeyAlgorithm::RS256, RSA_PUBLIC.to_string())],
        ..AuthConfig::default()
    }
}

fn auth(config: AuthConfig) -> Authenticator {
    Authenticator::new(config).expect("valid config")
}

fn player(id: &str) -> Player {
    Player {
        id: id.to_string(),
        guest: false,
        bot: false,
    }
}

/// Base64url without padding, for hand-built tokens.
fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Asserts `result` is the error `expected`, that it maps to UNAUTHENTICATED, and that neither
/// message repeats the token or any of its parts.
fn assert_refused(result: Result<Player, AuthError>, expected: AuthError, token: &str) {
    let error = result.expect_err("token must be refused");
    assert_eq!(error, expected);
    let status = error.to_status();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    assert_no_leak(&error.to_string(), token);
    assert_no_leak(status.message(), token);
}

fn assert_no_leak(message: &str, token: &str) {
    assert!(!message.is_empty());
    if token.is_empty() {
        return;
    }
    assert!(
        !message.contains(token),
        "message repeats the token: {message}"
    );
    for part in token.split('.').filter(|part| part.len() >= 8) {
        assert!(
            !message.contains(part),
            "message repeats part of the token: {message}"
        );
    }
}

#[test]
fn a_token_seen_again_is_the_same_player_from_the_verified_tokens() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    assert_eq!(auth.authenticate_token(&token), Ok(player("alice")));
    assert_eq!(auth.verified_tokens(), 1);
    let header = format!("Bearer {token}");
    assert_eq!(auth.authenticate_header(Some(&header)), Ok(player("alice")));
    assert_eq!(auth.verified_tokens(), 1);
    // A clone shares them: one set per gateway, whichever connection asks.
    assert_eq!(auth.clone().authenticate_token(&token), Ok(player("alice")));
    assert_eq!(auth.verified_tokens(), 1);
}

#[test]
fn refused_tokens_are_never_remembered() {
    let auth = auth(hs_config());
    let forged = hs256(OTHER_SECRET, &claims("mallory"));
    for _ in 0..2 {
        assert_refused(
            auth.authenticate_token(&forged),
            AuthError::BadSignature,
            &forged,
        );
    }
    let expired = hs256(SECRET, &with(claims("bob"), "exp", json!(now() - 3600)));
    assert_refused(
        auth.authenticate_token(&expired),
        AuthError::Expired,
        &expired,
    );
    assert_eq!(auth.verified_tokens(), 0);
}

#[test]
fn tokens_accepted_only_by_the_leeway_are_checked_in_full_every_time() {
    // Within the default leeway of a minute: accepted, but not inside their own times, so never
    // answered from memory.
    let auth = auth(hs_config());
    let just_expired = hs256(SECRET, &with(claims("carol"), "exp", json!(now() - 5)));
    let not_yet = hs256(SECRET, &with(claims("dave"), "nbf", json!(now() + 30)));
    for token in [&just_expired, &not_yet] {
        assert!(auth.authenticate_token(token).is_ok());
        assert!(auth.authenticate_token(token).is_ok());
    }
    assert_eq!(auth.verified_tokens(), 0);
}

#[test]
fn authenticator_is_cheap_to_share() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Authenticator>();
}

#[test]
fn hs256_token_authenticates() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    assert_eq!(auth.authenticate_token(&token), Ok(player("alice")));
    assert_eq!(auth.algorithms(), ["HS256"]);
}

/// An account the platform marked as a bot: `"bot": true` says so, `false` or no claim is a
/// person, and anything but a boolean is refused.
#[test]
fn the_bot_claim_marks_the_player_and_must_be_a_boolean() {
    let auth = auth(hs_config());
    let bot = hs256(SECRET, &with(claims("robo"), "bot", json!(true)));
    assert_eq!(
        auth.authenticate_token(&bot),
        Ok(Player {
            bot: true,
            ..player("robo")
        })
    );
    let person = hs256(SECRET, &with(claims("alice"), "bot", json!(false)));
    assert_eq!(auth.authenticate_token(&person), Ok(player("alice")));
    for value in [json!("yes"), json!(1), json!({})] {
        let token = hs256(SECRET, &with(claims("robo"), "bot", value.clone()));
        assert!(
            matches!(
                auth.authenticate_token(&token),
                Err(AuthError::Malformed(_))
            ),
            "{value}"
        );
    }
}

#[test]
fn bearer_scheme_is_case_insensitive_and_tolerates_spacing() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    for header in [
        format!("Bearer {token}"),
        format!("bearer {token}"),
        format!("BEARER {token}"),
        format!("  Bearer \t {token}  "),
    ] {
        assert_eq!(
            auth.authenticate_header(Some(&header)),
            Ok(player("alice")),
            "{header:?}"
        );
    }
}

#[test]
fn hs256_any_configured_secret_verifies_for_rotation() {
    let auth = auth(AuthConfig {
        hs256_secrets: vec![OTHER_SECRET.to_vec(), SECRET.to_vec()],
        ..AuthConfig::default()
    });
    assert_eq!(
        auth.authenticate_token(&hs256(SECRET, &claims("alice"))),
        Ok(player("alice"))
    );
    assert_eq!(
        auth.authenticate_token(&hs256(OTHER_SECRET, &claims("bob"))),
        Ok(player("bob"))
    );
}

#[test]
fn rs256_token_authenticates_with_the_public_key() {
    let auth = auth(rsa_config());
    let token = rs256(RSA_PRIVATE, &claims("carol"));
    assert_eq!(auth.authenticate_token(&token), Ok(player("carol")));
    assert_eq!(auth.algorithms(), ["RS256"]);
}

#[test]
fn eddsa_token_authenticates_with_the_public_key() {
    let auth = auth(AuthConfig {
        public_keys_pem: vec![(PublicKeyAlgorithm::EdDSA, ED_PUBLIC.to_string())],
        ..AuthConfig::default()
    });
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::EdDSA),
        &claims("dave"),
        &EncodingKey::from_ed_pem(ED_PRIVATE.as_bytes()).unwrap(),
    )
    .unwrap();
    assert_eq!(auth.authenticate_token(&token), Ok(player("dave")));
}

#[test]
fn es256_token_authenticates_with_the_public_key() {
    let auth = auth(AuthConfig {
        public_keys_pem: vec![(PublicKeyAlgorithm::ES256, EC_PUBLIC.to_string())],
        ..AuthConfig::default()
    });
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::ES256),
        &claims("erin"),
        &EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap(),
    )
    .unwrap();
    assert_eq!(auth.authenticate_token(&token), Ok(player("erin")));
}

#[test]
fn hs256_and_public_keys_work_side_by_side() {
    let auth = auth(AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        public_keys_pem: vec![(PublicKeyAlgorithm::RS256, RSA_PUBLIC.to_string())],
        ..AuthConfig::default()
    });
    assert_eq!(
        auth.authenticate_token(&hs256(SECRET, &claims("alice"))),
        Ok(player("alice"))
    );
    assert_eq!(
        auth.authenticate_token(&rs256(RSA_PRIVATE, &claims("bob"))),
        Ok(player("bob"))
    );
}

#[test]
fn expired_token_is_refused_with_leeway_honoured() {
    let expired_30s_ago = hs256(SECRET, &with(claims("alice"), "exp", json!(now() - 30)));
    let expired_10min_ago = hs256(SECRET, &with(claims("alice"), "exp", json!(now() - 600)));

    let lenient = auth(AuthConfig {
        leeway_seconds: 60,
        ..hs_config()
    });
    assert_eq!(
        lenient.authenticate_token(&expired_30s_ago),
        Ok(player("alice"))
    );
    assert_refused(
        lenient.authenticate_token(&expired_10min_ago),
        AuthError::Expired,
        &expired_10min_ago,
    );

    let strict = auth(AuthConfig {
        leeway_seconds: 0,
        ..hs_config()
    });
    assert_refused(
        strict.authenticate_token(&expired_30s_ago),
        AuthError::Expired,
        &expired_30s_ago,
    );
}

#[test]
fn token_without_expiry_is_refused() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &with(claims("alice"), "exp", Value::Null));
    assert_refused(
        auth.authenticate_token(&token),
        AuthError::MissingExpiry,
        &token,
    );
    // An `exp` that is not a number is no expiry either.
    let token = hs256(SECRET, &with(claims("alice"), "exp", json!("tomorrow")));
    assert_refused(
        auth.authenticate_token(&token),
        AuthError::MissingExpiry,
        &token,
    );
}

#[test]
fn not_yet_valid_token_is_refused_with_leeway_honoured() {
    let auth = auth(AuthConfig {
        leeway_seconds: 60,
        ..hs_config()
    });
    let nbf_soon = hs256(SECRET, &with(claims("alice"), "nbf", json!(now() + 30)));
    assert_eq!(auth.authenticate_token(&nbf_soon), Ok(player("alice")));
    let nbf_later = hs256(SECRET, &with(claims("alice"), "nbf", json!(now() + 600)));
    assert_refused(
        auth.authenticate_token(&nbf_later),
        AuthError::NotYetValid,
        &nbf_later,
    );

    let iat_soon = hs256(SECRET, &with(claims("alice"), "iat", json!(now() + 30)));
    assert_eq!(auth.authenticate_token(&iat_soon), Ok(player("alice")));
    let iat_later = hs256(SECRET, &with(claims("alice"), "iat", json!(now() + 600)));
    assert_refused(
        auth.authenticate_token(&iat_later),
        AuthError::NotYetValid,
        &iat_later,
    );
    let iat_text = hs256(SECRET, &with(claims("alice"), "iat", json!("now")));
    assert!(matches!(
        auth.authenticate_token(&iat_text),
        Err(AuthError::Malformed(_))
    ));
}

#[test]
fn wrong_hs256_secret_is_a_bad_signature() {
    let auth = auth(hs_config());
    let token = hs256(OTHER_SECRET, &claims("alice"));
    assert_refused(
        auth.authenticate_token(&token),
        AuthError::BadSignature,
        &token,
    );
}

#[test]
fn wrong_rsa_key_is_a_bad_signature() {
    let auth = auth(rsa_config());
    let token = rs256(RSA_OTHER_PRIVATE, &claims("alice"));
    assert_refused(
        auth.authenticate_token(&token),
        AuthError::BadSignature,
        &token,
    );
}

#[test]
fn altered_claims_are_a_bad_signature() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    let parts: Vec<&str> = token.split('.').collect();
    let forged_claims = b64url(claims("mallory").to_string().as_bytes());
    let forged = format!("{}.{}.{}", parts[0], forged_claims, parts[2]);
    assert_refused(
        auth.authenticate_token(&forged),
        AuthError::BadSignature,
        &forged,
    );
}

#[test]
fn alg_none_is_refused() {
    let auth = auth(hs_config());
    let header = b64url(br#"{"alg":"none","typ":"JWT"}"#);
    let body = b64url(claims("mallory").to_string().as_bytes());
    for token in [format!("{header}.{body}."), format!("{header}.{body}.AAAA")] {
        let error = auth.authenticate_token(&token).expect_err("alg none");
        assert!(matches!(error, AuthError::Malformed(_)), "{error:?}");
        assert_eq!(error.to_status().code(), Code::Unauthenticated);
    }
}

#[test]
fn algorithm_not_configured_is_refused() {
    let token = rs256(RSA_PRIVATE, &claims("alice"));
    assert_refused(
        auth(hs_config()).authenticate_token(&token),
        AuthError::AlgorithmNotAccepted("RS256"),
        &token,
    );
    let token = hs256(SECRET, &claims("alice"));
    assert_refused(
        auth(rsa_config()).authenticate_token(&token),
        AuthError::AlgorithmNotAccepted("HS256"),
        &token,
    );
}

#[test]
fn public_key_used_as_hmac_secret_is_refused() {
    // The classic confusion attack: sign HS256 with the (public) RSA key as the secret.
    let forged = hs256(RSA_PUBLIC.as_bytes(), &claims("mallory"));
    assert_refused(
        auth(rsa_config()).authenticate_token(&forged),
        AuthError::AlgorithmNotAccepted("HS256"),
        &forged,
    );
    // Even where HS256 is accepted too, the public key is never an HMAC secret.
    let both = auth(AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        ..rsa_config()
    });
    assert_refused(
        both.authenticate_token(&forged),
        AuthError::BadSignature,
        &forged,
    );
}

#[test]
fn header_alg_swapped_on_a_valid_signature_is_refused() {
    let both = auth(AuthConfig {
        hs256_secrets: vec![SECRET.to_vec()],
        ..rsa_config()
    });
    let token = hs256(SECRET, &claims("alice"));
    let parts: Vec<&str> = token.split('.').collect();
    let header = b64url(br#"{"alg":"RS256","typ":"JWT"}"#);
    let swapped = format!("{header}.{}.{}", parts[1], parts[2]);
    assert_refused(
        both.authenticate_token(&swapped),
        AuthError::BadSignature,
        &swapped,
    );
}

#[test]
fn missing_or_unusable_subject_is_refused() {
    let auth = auth(hs_config());
    let long_ok = "p".repeat(MAX_SUBJECT_BYTES);
    assert_eq!(
        auth.authenticate_token(&hs256(SECRET, &claims(&long_ok))),
        Ok(player(&long_ok))
    );
    assert_eq!(
        auth.authenticate_token(&hs256(SECRET, &claims("José Ñandú 军棋"))),
        Ok(player("José Ñandú 军棋"))
    );

    let too_long = "p".repeat(MAX_SUBJECT_BYTES + 1);
    for bad in [
        with(claims("x"), "sub", Value::Null),
        claims(""),
        with(claims("x"), "sub", json!(42)),
        claims(&too_long),
        claims("alice\nadmin"),
        claims("alice\u{7}"),
        claims("ali\u{200B}ce"),
        claims("\u{202E}ecila"),
        claims(" alice"),
        claims("alice "),
    ] {
        let token = hs256(SECRET, &bad);
        let error = auth.authenticate_token(&token).expect_err("bad sub");
        assert!(
            matches!(error, AuthError::BadSubject(_)),
            "{bad}: {error:?}"
        );
        assert_refused(Err(error.clone()), error, &token);
    }
}

#[test]
fn issuer_is_checked_when_configured() {
    let auth = auth(AuthConfig {
        issuer: Some("https://accounts.example".into()),
        ..hs_config()
    });
    let good = hs256(
        SECRET,
        &with(claims("alice"), "iss", json!("https://accounts.example")),
    );
    assert_eq!(auth.authenticate_token(&good), Ok(player("alice")));
    for claims in [
        with(claims("alice"), "iss", json!("https://evil.example")),
        claims("alice"),
    ] {
        let token = hs256(SECRET, &claims);
        assert_refused(
            auth.authenticate_token(&token),
            AuthError::WrongIssuer,
            &token,
        );
    }
}

#[test]
fn audience_is_checked_when_configured() {
    let auth = auth(AuthConfig {
        audience: Some("hidden-front".into()),
        ..hs_config()
    });
    for aud in [json!("hidden-front"), json!(["billing", "hidden-front"])] {
        let token = hs256(SECRET, &with(claims("alice"), "aud", aud));
        assert_eq!(auth.authenticate_token(&token), Ok(player("alice")));
    }
    for claims in [
        with(claims("alice"), "aud", json!("billing")),
        with(claims("alice"), "aud", json!(["billing"])),
        claims("alice"),
    ] {
        let token = hs256(SECRET, &claims);
        assert_refused(
            auth.authenticate_token(&token),
            AuthError::WrongAudience,
            &token,
        );
    }
}

#[test]
fn audience_is_refused_when_none_is_configured() {
    // RFC 7519 4.1.3: a token meant for someone else must not be accepted here.
    let auth = auth(hs_config());
    let token = hs256(SECRET, &with(claims("alice"), "aud", json!("billing")));
    assert_refused(
        auth.authenticate_token(&token),
        AuthError::WrongAudience,
        &token,
    );
}

#[test]
fn guest_tokens_follow_the_policy() {
    let guest_claims = with(claims("guest-1"), "guest", json!(true));
    let token = hs256(SECRET, &guest_claims);

    let closed = auth(AuthConfig {
        allow_guest_tokens: false,
        ..hs_config()
    });
    assert_refused(
        closed.authenticate_token(&token),
        AuthError::GuestNotAllowed,
        &token,
    );
    // `"guest": false` is an ordinary account token.
    let member = hs256(SECRET, &with(claims("alice"), "guest", json!(false)));
    assert_eq!(closed.authenticate_token(&member), Ok(player("alice")));

    let open = auth(AuthConfig {
        allow_guest_tokens: true,
        ..hs_config()
    });
    assert_eq!(
        open.authenticate_token(&token),
        Ok(Player {
            id: "guest-1".into(),
            guest: true,
            bot: false,
        })
    );
    assert_eq!(open.authenticate_token(&member), Ok(player("alice")));

    // Anything but a boolean is refused rather than guessed at.
    let odd = hs256(SECRET, &with(claims("guest-1"), "guest", json!("true")));
    assert!(matches!(
        open.authenticate_token(&odd),
        Err(AuthError::Malformed(_))
    ));
}

#[test]
fn malformed_authorization_headers_are_refused() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    assert_refused(auth.authenticate_header(None), AuthError::Missing, "");
    assert_refused(auth.authenticate_header(Some("")), AuthError::Missing, "");
    assert_refused(
        auth.authenticate_header(Some("   ")),
        AuthError::Missing,
        "",
    );
    for (header, sent) in [
        ("Bearer".to_string(), ""),
        ("Bearer    ".to_string(), ""),
        ("Basic x".to_string(), ""),
        (format!("Basic {token}"), token.as_str()),
        (format!("Token {token}"), token.as_str()),
        (token.clone(), token.as_str()),
        (format!("Bearer {token} {token}"), token.as_str()),
        ("Bearer not-a-jwt".to_string(), ""),
        ("Bearer a.b".to_string(), ""),
        ("Bearer a.b.c.d.e".to_string(), ""),
        ("Bearer a!b.c.d".to_string(), ""),
        ("Bearer %%%.%%%.%%%".to_string(), ""),
        ("Bearer e30.e30.e30".to_string(), ""),
    ] {
        let error = auth
            .authenticate_header(Some(&header))
            .expect_err("malformed header must be refused");
        assert!(
            matches!(error, AuthError::Malformed(_)),
            "{header:?}: {error:?}"
        );
        assert_refused(Err(error.clone()), error, sent);
    }
}

#[test]
fn oversized_token_is_refused_before_parsing() {
    let auth = auth(hs_config());
    let padding = "x".repeat(MAX_TOKEN_BYTES);
    let token = hs256(SECRET, &with(claims("alice"), "pad", json!(padding)));
    assert!(token.len() > MAX_TOKEN_BYTES);
    assert!(matches!(
        auth.authenticate_token(&token),
        Err(AuthError::Malformed(_))
    ));
}

#[test]
fn grpc_metadata_is_read() {
    let auth = auth(hs_config());
    let token = hs256(SECRET, &claims("alice"));
    let mut metadata = tonic::metadata::MetadataMap::new();
    assert_eq!(
        auth.authenticate_metadata(&metadata),
        Err(AuthError::Missing)
    );
    metadata.insert("authorization", format!("Bearer {token}").parse().unwrap());
    assert_eq!(auth.authenticate_metadata(&metadata), Ok(player("alice")));
    metadata.insert(
        "authorization",
        tonic::metadata::MetadataValue::try_from("Bearer \u{e9}".as_bytes()).unwrap(),
    );
    assert!(matches!(
        auth.authenticate_metadata(&metadata),
        Err(AuthError::Malformed(_))
    ));
}

/// Two `authorization` entries are refused whatever they hold and in either order: a proxy in
/// front could read the other one than this server does.
#[test]
fn more_than_one_authorization_entry_is_refused_in_any_order() {
    let auth = auth(hs_config());
    let good = format!("Bearer {}", hs256(SECRET, &claims("alice")));
    let other = format!("Bearer {}", hs256(SECRET, &claims("bob")));
    let bad = format!("Bearer {}", hs256(OTHER_SECRET, &claims("mallory")));
    for pair in [
        [&good, &bad],
        [&bad, &good],
        [&good, &good],
        [&good, &other],
    ] {
        let mut metadata = tonic::metadata::MetadataMap::new();
        for value in pair {
            metadata.append("authorization", value.parse().unwrap());
        }
        let refused = auth.authenticate_metadata(&metadata);
        assert_eq!(refused, Err(AuthError::MoreThanOneHeader), "{pair:?}");
        let status = refused.unwrap_err().to_status();
        assert_eq!(status.code(), Code::Unauthenticated);
        assert!(status.message().contains("more than one"), "{status:?}");
        assert_no_leak(status.message(), &good);
        assert_eq!(
            auth.authenticate_header_values(pair.map(|value| value.as_bytes())),
            Err(AuthError::MoreThanOneHeader),
            "{pair:?}"
        );
    }
    assert_eq!(
        auth.authenticate_header_values([good.as_bytes()]),
        Ok(player("alice"))
    );
    assert_eq!(
        auth.authenticate_header_values(std::iter::empty()),
        Err(AuthError::Missing)
    );
    assert!(matches!(
        auth.authenticate_header_values(["Bearer \u{e9}".as_bytes()]),
        Err(AuthError::Malformed(_))
    ));
}

#[test]
fn messages_never_contain_the_token_or_its_claims() {
    let marker = "marker-subject-8d1f3a";
    let auth = auth(AuthConfig {
        issuer: Some("platform".into()),
        audience: Some("hidden-front".into()),
        ..hs_config()
    });
    let base = with(
        with(claims(marker), "iss", json!("platform")),
        "aud",
        json!("hidden-front"),
    );
    let tokens = [
        hs256(SECRET, &with(base.clone(), "exp", json!(now() - 3600))),
        hs256(SECRET, &with(base.clone(), "nbf", json!(now() + 3600))),
        hs256(OTHER_SECRET, &base),
        hs256(SECRET, &with(base.clone(), "iss", json!(marker))),
        hs256(SECRET, &with(base.clone(), "aud", json!(marker))),
        hs256(SECRET, &with(base.clone(), "guest", json!(true))),
        hs256(SECRET, &with(base.clone(), "guest", json!(marker))),
        hs256(SECRET, &with(base.clone(), "exp", json!(marker))),
        hs256(
            SECRET,
            &with(base.clone(), "sub", json!(format!("{marker}\n"))),
        ),
        hs256(SECRET, &with(base.clone(), "sub", json!(marker.repeat(10)))),
        rs256(RSA_PRIVATE, &base),
    ];
    for token in tokens {
        let error = auth.authenticate_token(&token).expect_err("refused");
        for message in [error.to_string(), error.to_status().message().to_string()] {
            assert_no_leak(&message, &token);
            assert!(!message.contains(marker), "{message}");
        }
        let header = format!("Bearer {token}");
        let error = auth
            .authenticate_header(Some(&header))
            .expect_err("refused");
        assert_no_leak(&error.to_string(), &token);
    }
}

#[test]
fn configuration_mistakes_are_refused_at_startup() {
    let refused = |config: AuthConfig| match Authenticator::new(config) {
        Err(AuthError::Config(message)) => message,
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(_) => panic!("config must be refused"),
    };
    let rsa_key = |alg, pem: &str| AuthConfig {
        public_keys_pem: vec![(alg, pem.to_string())],
        ..AuthConfig::default()
    };

    assert!(refused(AuthConfig::default()).contains("no token key"));
    let message = refused(AuthConfig {
        hs256_secrets: vec![b"short-secret".to_vec()],
        ..AuthConfig::default()
    });
    assert!(message.contains("at least 32"), "{message}");
    assert!(!message.contains("short-secret"), "{message}");
    assert!(refused(rsa_key(PublicKeyAlgorithm::RS256, RSA_PRIVATE)).contains("private key"));
    assert!(refused(rsa_key(PublicKeyAlgorithm::EdDSA, ED_PRIVATE)).contains("private key"));
    refused(rsa_key(PublicKeyAlgorithm::RS256, "not a pem at all"));
    refused(rsa_key(
        PublicKeyAlgorithm::RS256,
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    ));
    refused(rsa_key(
        PublicKeyAlgorithm::RS256,
        &format!("{RSA_PUBLIC}{RSA_PUBLIC}"),
    ));
    assert!(refused(rsa_key(PublicKeyAlgorithm::RS256, RSA_WEAK_PUBLIC)).contains("2048"));
    // A key of another kind than its algorithm needs.
    refused(rsa_key(PublicKeyAlgorithm::EdDSA, RSA_PUBLIC));
    refused(rsa_key(PublicKeyAlgorithm::RS256, ED_PUBLIC));
    refused(rsa_key(PublicKeyAlgorithm::ES256, ED_PUBLIC));
    refused(rsa_key(PublicKeyAlgorithm::ES384, EC_PUBLIC));
    refused(AuthConfig {
        leeway_seconds: 100_000,
        ..hs_config()
    });
    refused(AuthConfig {
        issuer: Some(String::new()),
        ..hs_config()
    });
    refused(AuthConfig {
        audience: Some(" ".into()),
        ..hs_config()
    });

    // Startup errors are not for callers.
    let error = Authenticator::new(AuthConfig::default()).unwrap_err();
    assert_eq!(error.to_status().code(), Code::Internal);
}

#[test]
fn debug_output_never_shows_secrets() {
    let config = hs_config();
    let shown = format!("{config:?}");
    assert!(
        !shown.contains(std::str::from_utf8(SECRET).unwrap()),
        "{shown}"
    );
    assert!(shown.contains("redacted"));
    let shown = format!("{:?}", auth(config));
    assert!(
        !shown.contains(std::str::from_utf8(SECRET).unwrap()),
        "{shown}"
    );
}

#[test]
fn public_key_algorithm_names_parse() {
    for alg in PublicKeyAlgorithm::ALL {
        assert_eq!(alg.as_str().parse::<PublicKeyAlgorithm>(), Ok(alg));
        assert_eq!(alg.to_string(), alg.as_str());
    }
    assert_eq!("rs256".parse(), Ok(PublicKeyAlgorithm::RS256));
    assert!("HS256".parse::<PublicKeyAlgorithm>().is_err());
    assert!("none".parse::<PublicKeyAlgorithm>().is_err());
}

#[test]
fn dev_tokens_verify_under_the_dev_config() {
    let auth = auth(AuthConfig::dev());
    assert!(auth.uses_dev_secret());
    assert!(!self::auth(hs_config()).uses_dev_secret());

    let guest = mint_dev_token(
        DEV_SECRET.as_bytes(),
        "alice",
        Duration::from_secs(60),
        true,
    )
    .unwrap();
    assert_eq!(
        auth.authenticate_token(&guest),
        Ok(Player {
            id: "alice".into(),
            guest: true,
            bot: false,
        })
    );
    let member =
        mint_dev_token(DEV_SECRET.as_bytes(), "bob", Duration::from_secs(60), false).unwrap();
    assert_eq!(auth.authenticate_token(&member), Ok(player("bob")));
}

#[test]
fn dev_tokens_carry_the_documented_claims() {
    let token = mint_dev_token(SECRET, "alice", Duration::from_secs(600), true).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, Algorithm::HS256);
    let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(&token).unwrap();
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["guest"], true);
    let iat = claims["iat"].as_i64().unwrap();
    let exp = claims["exp"].as_i64().unwrap();
    assert!((iat - now()).abs() <= 5, "{claims}");
    assert_eq!(exp - iat, 600);

    let token = mint_dev_token(SECRET, "alice", Duration::from_secs(600), false).unwrap();
    let claims: Value = jsonwebtoken::dangerous::insecure_decode_claims(&token).unwrap();
    assert!(claims.get("guest").is_none(), "{claims}");

    // Signed with exactly the given secret.
    assert_eq!(
        self::auth(hs_config()).authenticate_token(&token),
        Ok(player("alice"))
    );
    assert_eq!(
        self::auth(AuthConfig::dev()).authenticate_token(&token),
        Err(AuthError::BadSignature)
    );
}

#[test]
fn dev_token_requests_that_would_not_verify_are_refused() {
    let ttl = Duration::from_secs(60);
    assert!(matches!(
        mint_dev_token(b"short", "alice", ttl, false),
        Err(AuthError::Config(_))
    ));
    assert!(matches!(
        mint_dev_token(SECRET, "alice", Duration::ZERO, false),
        Err(AuthError::Config(_))
    ));
    for bad in ["", " alice", "a\u{0}b"] {
        assert!(matches!(
            mint_dev_token(SECRET, bad, ttl, false),
            Err(AuthError::BadSubject(_))
        ));
    }
}
