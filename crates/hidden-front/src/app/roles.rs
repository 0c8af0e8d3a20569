//! Which services this process runs, where each one's API is served, and the combinations that
//! cannot work (refused before anything is bound).

use crate::config::{ServeArgs, ServiceName};
use anyhow::bail;
use hidden_front_proto::v1::admin_service_server::SERVICE_NAME as ADMIN_SERVICE;
use hidden_front_proto::v1::clock_service_server::SERVICE_NAME as CLOCK_SERVICE;
use hidden_front_proto::v1::matchmaking_service_server::SERVICE_NAME as MATCHMAKING_SERVICE;
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
        ] {
            if runs {
                beside_session.push(service);
            }
        }
        (public, internal)
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
                    MATCHMAKING_SERVICE
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
}
