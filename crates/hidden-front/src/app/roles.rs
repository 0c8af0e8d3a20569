//! Which services this process runs, where each one's API is served, and the combinations and
//! settings that cannot work: all refused here, before anything is bound, connected or migrated
//! ([`Roles::of`] is the first thing [`crate::app::Application::build`] does). A setting found
//! wrong only after the migrations ran would leave a database changed by a process that never
//! served.

use crate::config::{ADMIN_TOKEN_ENV, ServeArgs, ServiceName};
use anyhow::{Context, bail};
use hidden_front_gateway::auth::PublicKeyAlgorithm;
use hidden_front_proto::v1::admin_service_server::SERVICE_NAME as ADMIN_SERVICE;
use hidden_front_proto::v1::clock_service_server::SERVICE_NAME as CLOCK_SERVICE;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
use hidden_front_proto::v1::organiser_service_server::SERVICE_NAME as ORGANISER_SERVICE;
use hidden_front_proto::v1::player_service_server::SERVICE_NAME as PLAYER_SERVICE;
use hidden_front_proto::v1::session_service_server::SERVICE_NAME as SESSION_SERVICE;

/// The services of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Roles {
    pub session: bool,
    pub gateway: bool,
    pub clock: bool,
    pub matchmaking: bool,
}

impl Roles {
    /// The roles `--services` names, after refusing the combinations that cannot run.
    pub fn of(args: &ServeArgs) -> anyhow::Result<Roles> {
        if args.services.is_empty() {
            bail!("--services needs at least one service");
        }
        let runs = |name: ServiceName| {
            args.services
                .iter()
                .any(|s| *s == ServiceName::All || *s == name)
        };
        let roles = Roles {
            session: runs(ServiceName::Session),
            gateway: runs(ServiceName::Gateway),
            clock: runs(ServiceName::Clock),
            matchmaking: runs(ServiceName::Matchmaking),
        };
        if roles.matchmaking && !roles.session && args.session_url.is_none() {
            bail!(
                "matchmaking without the session in this process needs --session-url (HF_SESSION_URL)"
            );
        }
        if roles.clock && !roles.session && args.database_url.is_none() {
            bail!(
                "the clock without the session in this process needs DATABASE_URL: it reads the \
                 timers the session writes"
            );
        }
        if roles.clock && !roles.session && args.session_url.is_none() {
            bail!(
                "the clock without the session in this process needs --session-url (HF_SESSION_URL)"
            );
        }
        check_settings(args, roles)?;
        Ok(roles)
    }

    /// Whether this process needs the game store (a gateway alone needs none).
    pub fn needs_store(self) -> bool {
        self.session || self.clock || self.matchmaking
    }

    /// Whether the session's API goes to the internal port: with the gateway in this process the
    /// session's full-information API is never served on the public port, and the clock's and
    /// matchmaking's APIs go with it.
    pub fn internal_port(self) -> bool {
        self.session && self.gateway
    }

    /// The full names of the services of the public port and of the internal one, so that each
    /// port's health and reflection name exactly those.
    pub fn port_services(self) -> (Vec<&'static str>, Vec<&'static str>) {
        let (mut public, mut internal) = (Vec::new(), Vec::new());
        if self.gateway {
            public.push(PLAYER_SERVICE);
        }
        let beside_session = if self.internal_port() {
            &mut internal
        } else {
            &mut public
        };
        for (runs, service) in [
            (self.session, SESSION_SERVICE),
            (self.session, ADMIN_SERVICE),
            (self.clock, CLOCK_SERVICE),
            (self.matchmaking, MATCHMAKING_SERVICE),
            (self.matchmaking, ORGANISER_SERVICE),
        ] {
            if runs {
                beside_session.push(service);
            }
        }
        (public, internal)
    }
}

/// Every setting the roles will use, checked without touching anything (no file is written, no
/// connection opened): the operator tokens, the database URL, the webhooks file, the service
/// URLs, the page's frame ancestors, the player token keys. The services check them again when
/// they are built; this is so that a mistake is said before the database is migrated.
fn check_settings(args: &ServeArgs, roles: Roles) -> anyhow::Result<()> {
    if roles.session || roles.matchmaking {
        hidden_front_session::AdminTokens::parse(&args.admin_tokens)
            .with_context(|| format!("--admin-token ({ADMIN_TOKEN_ENV})"))?;
    }
    if roles.needs_store()
        && let Some(url) = &args.database_url
    {
        crate::database::check_url(url)?;
    }
    if !args.database_shards.is_empty() {
        if args.database_url.is_none() {
            bail!(
                "--database-shard (HF_DATABASE_SHARDS) needs --database-url (DATABASE_URL): that \
                 database is shard 0 and holds the global tables; without it games are in memory"
            );
        }
        if args.database_shards.len() + 1 > hidden_front_store::placement::MAX_SHARDS {
            bail!(
                "--database-shard (HF_DATABASE_SHARDS): at most {} shards in all, not {}",
                hidden_front_store::placement::MAX_SHARDS,
                args.database_shards.len() + 1
            );
        }
        for (index, url) in args.database_shards.iter().enumerate() {
            crate::database::check_url(url).with_context(|| {
                format!(
                    "--database-shard number {} (shard {})",
                    index + 1,
                    index + 1
                )
            })?;
        }
        let mut seen = std::collections::HashSet::new();
        for url in args.database_url.iter().chain(&args.database_shards) {
            if !seen.insert(url.trim()) {
                bail!(
                    "--database-shard (HF_DATABASE_SHARDS): a database is listed twice; each shard \
                     must be a database of its own"
                );
            }
        }
    }
    if let Some(path) = &args.webhooks_config {
        if !roles.session {
            bail!(
                "--webhooks-config (HF_WEBHOOKS_CONFIG) is for the process that runs the session: \
                 it delivers the session's lifecycle feed"
            );
        }
        hidden_front_webhooks::WebhooksConfig::load(path)
            .context("--webhooks-config (HF_WEBHOOKS_CONFIG)")?;
    }
    for (flag, url) in [
        ("--session-url (HF_SESSION_URL)", &args.session_url),
        (
            "--matchmaking-url (HF_MATCHMAKING_URL)",
            &args.matchmaking_url,
        ),
        (
            "--invite-base-url (HF_INVITE_BASE_URL)",
            &args.invite_base_url,
        ),
    ] {
        if let Some(url) = url {
            check_http_url(url).with_context(|| flag.to_string())?;
        }
    }
    if roles.gateway && args.web_client {
        hidden_front_gateway::http::PageConfig::new(
            hidden_front_web_assets::Bundle::embedded(),
            &args.web_frame_ancestors,
        )
        .context("--web-frame-ancestors (HF_WEB_FRAME_ANCESTORS)")?;
    }
    if roles.gateway {
        for entry in &args.jwt_public_keys {
            let (alg, path) = entry
                .split_once(':')
                .with_context(|| format!("--jwt-public-keys entry {entry:?} is not ALG:PATH"))?;
            alg.parse::<PublicKeyAlgorithm>()
                .map_err(|e| anyhow::anyhow!("--jwt-public-keys entry {entry:?}: {e}"))?;
            std::fs::metadata(path)
                .with_context(|| format!("--jwt-public-keys entry {entry:?}: the key file"))?;
        }
    }
    Ok(())
}

/// `url` is an absolute `http://` or `https://` URL with a host (how every service address and
/// the invite base are given).
fn check_http_url(url: &str) -> anyhow::Result<()> {
    let uri: tonic::codegen::http::Uri = url
        .parse()
        .map_err(|_| anyhow::anyhow!("{url:?} is not a URL like http://session-headless:50051"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(()),
        _ => bail!("{url:?} is not an http:// or https:// URL with a host"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roles of `flags`, whatever the environment says (CI sets DATABASE_URL and the
    /// session URL comes only from the flags here).
    fn roles(flags: &[&str]) -> anyhow::Result<Roles> {
        let mut args = ServeArgs::from_flags(flags.iter().copied()).expect("flags");
        args.database_url = None;
        if !flags.contains(&"--session-url") {
            args.session_url = None;
        }
        Roles::of(&args)
    }

    #[test]
    fn all_puts_the_session_clock_and_matchmaking_behind_the_internal_port() {
        let all = roles(&["--services", "all"]).unwrap();
        assert!(all.internal_port() && all.needs_store());
        assert_eq!(
            all.port_services(),
            (
                vec![PLAYER_SERVICE],
                vec![
                    SESSION_SERVICE,
                    ADMIN_SERVICE,
                    CLOCK_SERVICE,
                    MATCHMAKING_SERVICE,
                    ORGANISER_SERVICE
                ]
            )
        );
    }

    #[test]
    fn a_session_alone_serves_on_the_public_port() {
        let session = roles(&["--services", "session"]).unwrap();
        assert!(!session.internal_port());
        assert_eq!(
            session.port_services(),
            (vec![SESSION_SERVICE, ADMIN_SERVICE], vec![])
        );
        let gateway = roles(&["--services", "gateway"]).unwrap();
        assert!(!gateway.needs_store());
    }

    #[test]
    fn combinations_that_cannot_work_are_refused_by_name() {
        let error = roles(&["--services", "matchmaking"]).unwrap_err();
        assert!(error.to_string().contains("--session-url"), "{error}");
        let error = roles(&["--services", "clock", "--session-url", "http://s:1"]).unwrap_err();
        assert!(error.to_string().contains("DATABASE_URL"), "{error}");
    }

    #[test]
    fn settings_that_cannot_work_are_refused_before_anything_is_touched() {
        let refused = |flags: &[&str], says: &[&str]| {
            let mut args = ServeArgs::from_flags(flags.iter().copied()).expect("flags");
            if !flags.contains(&"--database-url") {
                args.database_url = None;
            }
            let error = format!("{:#}", Roles::of(&args).unwrap_err());
            for said in says {
                assert!(error.contains(said), "{flags:?}: {error}");
            }
        };
        refused(
            &["--admin-token", "ops=123456789012345678901"],
            &["--admin-token", "\"ops\"", "21 bytes"],
        );
        refused(
            &["--database-url", "mysql://root@y/z"],
            &["DATABASE_URL", "\"mysql\""],
        );
        refused(
            &["--webhooks-config", "/nonexistent/hf-webhooks.json"],
            &["--webhooks-config"],
        );
        refused(&["--session-url", "session:50051"], &["--session-url"]);
        refused(
            &["--database-shard", "postgres://u@h/s1"],
            &["--database-shard", "needs --database-url"],
        );
        refused(
            &[
                "--database-url",
                "postgres://u@h/main",
                "--database-shard",
                "mysql://u@h/s1",
            ],
            &["--database-shard number 1", "\"mysql\""],
        );
        refused(
            &[
                "--database-url",
                "postgres://u@h/main",
                "--database-shard",
                "postgres://u@h/main",
            ],
            &["listed twice"],
        );
        refused(
            &["--web-frame-ancestors", "'self'; script-src *"],
            &["--web-frame-ancestors"],
        );
        refused(
            &["--jwt-public-keys", "RS256:/nonexistent/key.pem"],
            &["--jwt-public-keys", "key file"],
        );
        // A gateway alone uses no store and no operator token.
        let mut gateway = ServeArgs::from_flags([
            "--services",
            "gateway",
            "--database-url",
            "mysql://root@y/z",
        ])
        .unwrap();
        gateway.admin_tokens = vec!["ops=short".into()];
        assert!(Roles::of(&gateway).is_ok());
    }
}
