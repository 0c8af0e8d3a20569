//! `hidden-front token`: mints a player token, as a platform's sign-in service would, so the
//! one-box setup, demos and manual tests can call the gateway without one.
//!
//! The token is HS256 with `sub`, `iat`, `exp` and, for a guest, `"guest": true`; the gateway
//! accepts it when it shares the secret (by default both use the public development secret).

use std::time::Duration;

use anyhow::Context;
use clap::{ArgAction, Args};
use hidden_front_gateway::auth::{DEV_SECRET, mint_dev_token};

/// Arguments of `hidden-front token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Player id to put in the token's `sub`.
    #[arg(long)]
    player: String,
    /// How long the token stays valid, in seconds.
    #[arg(long, default_value_t = 86_400)]
    ttl_seconds: u64,
    /// HS256 secret to sign with: the gateway's. When several are given comma-separated (as
    /// `serve` takes them for rotation), the first signs. Defaults to the public development
    /// secret that `serve` uses when none is configured.
    #[arg(
        long,
        env = "HF_JWT_SECRET",
        value_delimiter = ',',
        default_value = DEV_SECRET,
        hide_env_values = true,
        hide_default_value = true
    )]
    secret: Vec<String>,
    /// Whether the token is a guest's (`"guest": true`); gateways may refuse guests.
    #[arg(long, default_value_t = true, action = ArgAction::Set, value_name = "true|false")]
    guest: bool,
}

/// Prints one token line on stdout.
pub fn run(args: TokenArgs) -> anyhow::Result<()> {
    let secret = args
        .secret
        .first()
        .map(String::as_str)
        .unwrap_or(DEV_SECRET);
    let token = mint_dev_token(
        secret.as_bytes(),
        &args.player,
        Duration::from_secs(args.ttl_seconds),
        args.guest,
    )
    .context("cannot mint a token")?;
    println!("{token}");
    Ok(())
}
