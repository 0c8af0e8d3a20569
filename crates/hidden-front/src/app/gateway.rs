//! The gateway of this process: player authentication from the token flags, clients of the
//! session and of matchmaking, and its two faces (the gRPC `PlayerService` and, on the HTTP
//! listener, the WebSocket API).

use crate::config::ServeArgs;
use anyhow::Context;
use hidden_front_gateway::auth::{AuthConfig, Authenticator, PublicKeyAlgorithm};
use hidden_front_gateway::ws::WsConfig;
use hidden_front_gateway::{Gateway, GatewayConfig, PlayerApi};
use hidden_front_proto::v1::player_service_server::PlayerServiceServer;
use std::time::Duration;

/// The gateway and its gRPC face. Without `matchmaking_url` the matchmaking operations answer
/// UNAVAILABLE.
pub(crate) fn build(
    args: &ServeArgs,
    session_url: &str,
    matchmaking_url: Option<&str>,
) -> anyhow::Result<(PlayerServiceServer<PlayerApi>, Gateway)> {
    let authenticator =
        Authenticator::new(auth_config(args)?).context("player token configuration")?;
    let session = hidden_front_channel::session_client(session_url)
        .with_context(|| format!("session URL {session_url:?}"))?;
    let matchmaking = matchmaking_url
        .map(|url| {
            hidden_front_channel::matchmaking_client(url)
                .with_context(|| format!("matchmaking URL {url:?}"))
        })
        .transpose()?;
    let gateway = Gateway::new(
        GatewayConfig {
            presence_lease: Duration::from_secs(args.presence_lease_seconds),
            max_streams: args.max_streams,
            stream_buffer: args.stream_buffer,
            max_lag: Duration::from_millis(args.stream_max_lag_ms),
            actions_per_second: args.actions_per_second,
            action_burst: args.actions_per_second.saturating_mul(2),
            matchmaking,
            ..GatewayConfig::default()
        },
        authenticator,
        session,
    );
    let api = PlayerServiceServer::new(PlayerApi::new(gateway.clone()))
        .max_decoding_message_size(args.max_message_bytes);
    Ok((api, gateway))
}

/// The WebSocket face's settings.
pub(crate) fn ws_config(args: &ServeArgs) -> WsConfig {
    WsConfig {
        max_connections: args.ws_max_connections,
        max_message_bytes: args.max_message_bytes,
        ..WsConfig::default()
    }
}

/// Which player tokens the gateway accepts. Without a secret or a public key it accepts the
/// public development secret, and says so loudly.
fn auth_config(args: &ServeArgs) -> anyhow::Result<AuthConfig> {
    let mut auth = AuthConfig {
        hs256_secrets: args
            .jwt_secret
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        issuer: args.jwt_issuer.clone(),
        audience: args.jwt_audience.clone(),
        allow_guest_tokens: args.allow_guest_tokens,
        ..AuthConfig::default()
    };
    for entry in &args.jwt_public_keys {
        let (alg, path) = entry
            .split_once(':')
            .with_context(|| format!("--jwt-public-keys entry {entry:?} is not ALG:PATH"))?;
        let alg: PublicKeyAlgorithm = alg
            .parse()
            .map_err(|e| anyhow::anyhow!("--jwt-public-keys entry {entry:?}: {e}"))?;
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("reading the public key file {path}"))?;
        auth.public_keys_pem.push((alg, pem));
    }
    if auth.hs256_secrets.is_empty() && auth.public_keys_pem.is_empty() {
        eprintln!(
            "WARNING: no HF_JWT_SECRET or HF_JWT_PUBLIC_KEYS: the gateway accepts tokens signed with \
             the PUBLIC development secret (hidden-front token). Never run a public gateway like this."
        );
        auth.hs256_secrets = AuthConfig::dev().hs256_secrets;
    }
    Ok(auth)
}
