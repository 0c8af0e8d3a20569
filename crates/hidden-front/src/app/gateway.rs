//! The gateway of this process: player authentication from the token flags, clients of the
//! session and of matchmaking, and its faces (the gRPC `PlayerService` and, on the HTTP
//! listener, the WebSocket API, the browser client, guest sign-in and the server's time).

use crate::config::ServeArgs;
use anyhow::Context;
use hidden_front_gateway::auth::{AuthConfig, Authenticator, PublicKeyAlgorithm};
use hidden_front_gateway::http::{GuestConfig, HttpConfig, PageConfig};
use hidden_front_gateway::ws::WsConfig;
use hidden_front_gateway::{ConnectConfig, Gateway, GatewayConfig, PlayerApi};
use hidden_front_proto::v1::player_service_server::PlayerServiceServer;
use hidden_front_web_assets::Bundle;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// What [`build`] makes: the gRPC face, the gateway, and what its HTTP listener serves besides
/// the WebSocket API.
pub(crate) struct Built {
    pub(crate) api: PlayerServiceServer<PlayerApi>,
    pub(crate) gateway: Gateway,
    pub(crate) http: HttpConfig,
    /// How many of the session's addresses serve (the gateway's readiness follows it).
    pub(crate) session_serving: hidden_front_channel::Serving,
}

/// The gateway, its gRPC face and its HTTP routes, calling the session by `session`. Without `matchmaking_url` the matchmaking
/// operations answer UNAVAILABLE.
pub(crate) fn build(
    args: &ServeArgs,
    route: &super::session::SessionRoute,
    matchmaking_url: Option<&str>,
) -> anyhow::Result<Built> {
    let auth = auth_config(args)?;
    let http = http_config(args, &auth)?;
    let authenticator = Authenticator::new(auth).context("player token configuration")?;
    let (session, session_serving) = route.client_and_health()?;
    let matchmaking = matchmaking_url
        .map(|url| {
            hidden_front_channel::matchmaking_client(url)
                .with_context(|| format!("matchmaking URL {url:?}"))
        })
        .transpose()?;
    let config = GatewayConfig {
        presence_lease: Duration::from_secs(args.presence_lease_seconds),
        max_streams: args.max_streams,
        stream_buffer: args.stream_buffer,
        max_lag: Duration::from_millis(args.stream_max_lag_ms),
        actions_per_second: args.actions_per_second,
        action_burst: args.actions_per_second.saturating_mul(2),
        matchmaking,
        connect: connect_config(args),
        ..GatewayConfig::default()
    };
    // In one process, actions and followed games go to the session itself (`referee.rs`).
    let gateway = match route {
        super::session::SessionRoute::Local { session: local, .. } => Gateway::with_referee(
            config,
            authenticator,
            session,
            Arc::new(super::referee::LocalReferee::new(Arc::clone(local))),
        ),
        super::session::SessionRoute::Remote(_) => Gateway::new(config, authenticator, session),
    };
    let api = PlayerServiceServer::new(PlayerApi::new(gateway.clone()))
        .max_decoding_message_size(args.max_message_bytes);
    Ok(Built {
        api,
        gateway,
        http,
        session_serving,
    })
}

/// The HTTP routes beside the WebSocket API: the embedded browser client (unless
/// `--web-client=false`), guest sign-in as the token configuration allows it.
fn http_config(args: &ServeArgs, auth: &AuthConfig) -> anyhow::Result<HttpConfig> {
    let page = match args.web_client {
        true => Some(
            PageConfig::new(Bundle::embedded(), &args.web_frame_ancestors)
                .context("--web-frame-ancestors")?,
        ),
        false => None,
    };
    let guests = GuestConfig::from_auth(auth).with_rate(
        args.guest_tokens_per_minute,
        args.guest_tokens_per_minute.saturating_mul(2),
    );
    Ok(HttpConfig { page, guests })
}

/// The default `--invite-base-url`: the page of the gateway at `http` (its bound address),
/// `http://HOST:PORT/invite`. An unspecified address (0.0.0.0, ::) is not one a browser can
/// open, so the loopback address of its family stands for it.
pub(crate) fn default_invite_base_url(http: SocketAddr) -> String {
    let host = match http.ip() {
        ip if !ip.is_unspecified() => ip,
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    format!("http://{}/invite", SocketAddr::new(host, http.port()))
}

/// A `Connect` connection's limits, from the settings of the streams and actions it carries
/// (docs/connect.md): it may hold four times `--stream-buffer` messages unread for at most
/// `--stream-max-lag-ms` (every follow is a stream), and send twice the actions a player may, at
/// least 100 messages a second (a request that is not an action counts too).
pub(crate) fn connect_config(args: &ServeArgs) -> ConnectConfig {
    let per_second = args.actions_per_second.saturating_mul(2).max(100);
    ConnectConfig {
        outbound_queue: args.stream_buffer.saturating_mul(4).max(16),
        stall_timeout: Duration::from_millis(args.stream_max_lag_ms),
        messages_per_second: per_second,
        message_burst: per_second.saturating_mul(2),
        ..ConnectConfig::default()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_invite_link_is_the_gateways_own_page() {
        let at = |addr: &str| default_invite_base_url(addr.parse().expect("an address"));
        assert_eq!(at("127.0.0.1:8080"), "http://127.0.0.1:8080/invite");
        assert_eq!(at("0.0.0.0:8080"), "http://127.0.0.1:8080/invite");
        assert_eq!(at("192.0.2.4:80"), "http://192.0.2.4:80/invite");
        assert_eq!(at("[::]:8080"), "http://[::1]:8080/invite");
        assert_eq!(at("[2001:db8::1]:8080"), "http://[2001:db8::1]:8080/invite");
    }
}
