//! `hidden-front token` prints one token that the gateway's authenticator accepts.

use std::process::{Command, Output};

use hidden_front_gateway::auth::{AuthConfig, AuthError, Authenticator, Player};

const SECRET: &str = "a-secret-for-the-token-command-test-0123456789";

fn token_command(args: &[&str], env_secret: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hidden-front"));
    command.arg("token").args(args).env_remove("HF_JWT_SECRET");
    if let Some(secret) = env_secret {
        command.env("HF_JWT_SECRET", secret);
    }
    command.output().expect("run hidden-front token")
}

/// The single line printed, after checking the command succeeded.
fn printed_token(output: &Output) -> String {
    assert!(
        output.status.success(),
        "status {:?}, stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got {stdout:?}");
    lines[0].to_string()
}

fn authenticator(secret: &str, allow_guest_tokens: bool) -> Authenticator {
    Authenticator::new(AuthConfig {
        hs256_secrets: vec![secret.as_bytes().to_vec()],
        allow_guest_tokens,
        ..AuthConfig::default()
    })
    .unwrap()
}

#[test]
fn default_token_is_a_guest_token_under_the_dev_secret() {
    let token = printed_token(&token_command(&["--player", "alice"], None));
    let dev = Authenticator::new(AuthConfig::dev()).unwrap();
    assert_eq!(
        dev.authenticate_header(Some(&format!("Bearer {token}"))),
        Ok(Player {
            id: "alice".into(),
            guest: true,
            bot: false,
        })
    );
    assert_eq!(
        authenticator(SECRET, true).authenticate_token(&token),
        Err(AuthError::BadSignature)
    );
}

#[test]
fn secret_guest_and_ttl_flags_are_honoured() {
    let output = token_command(
        &[
            "--player",
            "bob",
            "--secret",
            SECRET,
            "--guest",
            "false",
            "--ttl-seconds",
            "120",
        ],
        None,
    );
    let token = printed_token(&output);
    assert_eq!(
        authenticator(SECRET, false).authenticate_token(&token),
        Ok(Player {
            id: "bob".into(),
            guest: false,
            bot: false,
        })
    );
    let claims: serde_json::Value =
        jsonwebtoken_claims(&token).expect("claims of the printed token");
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        120
    );
}

#[test]
fn secret_comes_from_the_environment() {
    let token = printed_token(&token_command(&["--player", "carol"], Some(SECRET)));
    assert_eq!(
        authenticator(SECRET, true).authenticate_token(&token),
        Ok(Player {
            id: "carol".into(),
            guest: true,
            bot: false,
        })
    );
    // A rotation list, as `serve` takes it: the first secret signs.
    let list = format!("{SECRET},another-secret-that-is-long-enough-0123456789");
    let token = printed_token(&token_command(&["--player", "carol"], Some(&list)));
    assert!(
        authenticator(SECRET, true)
            .authenticate_token(&token)
            .is_ok()
    );
}

#[test]
fn unusable_requests_fail_without_printing_a_token() {
    for args in [
        &["--player", ""][..],
        &["--player", "alice", "--secret", "short"],
        &["--player", "alice", "--ttl-seconds", "0"],
        &["--player", "alice", "--guest", "maybe"],
    ] {
        let output = token_command(args, None);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// The claims of `token`, unverified (the other tests verify).
fn jsonwebtoken_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = b64url_decode(payload)?;
    serde_json::from_slice(&bytes).ok()
}

fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}
