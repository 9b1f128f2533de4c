//! The settings room: the configuration in force (replaced whole on reload), the
//! measurement protocol derived from it, and the operator's rules for metric sources (who
//! command metrics run as, which programs and files they may use).

use std::sync::{Arc, RwLock};

use crate::config::Config;
use placed_core::policy::Policy;
use placed_host::migrate::{Mode, ModeKind};
use placed_host::observe::{PatternError, PatternInput, Protocol, RunAs, SourceSpec};

use super::environment::StartError;
use super::error::DaemonError;

/// The configuration and what is derived from it. Readers take the current value
/// ([`Settings::config`]); a reload replaces it whole, so a step never sees half of two.
#[derive(Debug)]
pub(crate) struct Settings {
    config: RwLock<Arc<Config>>,
    protocol: RwLock<Arc<Protocol>>,
    /// Whom command metrics run as; `None` when the configuration does not allow them.
    /// Looked up once at start: a reload cannot turn command metrics on.
    command_user: Option<RunAs>,
}

/// The user command metrics run as, looked up once at start; `None` when they are off.
fn command_user(config: &Config) -> Result<Option<RunAs>, StartError> {
    if !config.observe.allow_command_metrics {
        return Ok(None);
    }
    let name = &config.observe.command_user;
    let user = nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .ok_or_else(|| StartError::CommandUser { user: name.clone() })?;
    if user.uid.is_root() {
        return Err(StartError::CommandUser { user: name.clone() });
    }
    // The packaged unit leaves CAP_SETUID and CAP_SETGID out of its bounding set while
    // command metrics are off: said at start, not as EPERM at every measurement.
    if !can_switch_user(bounding_set_has) {
        return Err(StartError::CommandUserCapabilities);
    }
    tracing::warn!(user = %name, "command metrics are allowed: API callers can run programs on this host as this user");
    Ok(Some(RunAs {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }))
}

/// `linux/capability.h` (the libc crate does not have them).
const CAP_SETGID: libc::c_ulong = 6;
const CAP_SETUID: libc::c_ulong = 7;

/// Whether capability `cap` is in this process's bounding set (a root process then holds
/// it, as placed runs as root).
fn bounding_set_has(cap: libc::c_ulong) -> bool {
    // SAFETY: PR_CAPBSET_READ reads one flag of this process; no pointers are passed.
    unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 1 }
}

/// Whether the daemon may switch to the command user: setuid and setgid both need their
/// capabilities (`has` answers for one).
fn can_switch_user(has: impl Fn(libc::c_ulong) -> bool) -> bool {
    has(CAP_SETUID) && has(CAP_SETGID)
}

impl Settings {
    pub fn new(config: Config) -> Result<Self, StartError> {
        let protocol = config.protocol().map_err(StartError::Protocol)?;
        let command_user = command_user(&config)?;
        Ok(Self {
            config: RwLock::new(Arc::new(config)),
            protocol: RwLock::new(Arc::new(protocol)),
            command_user,
        })
    }

    /// The policy new containers get unless `Manage` says otherwise.
    pub fn default_policy(&self) -> Policy {
        let policy = &self.config().policy;
        // The configuration was validated at load (and reload): its default policy parses.
        Policy::parse(&policy.default, policy.goal).unwrap_or(Policy::Observe)
    }

    /// The policy that places a model-policy container while the live gate has stopped its
    /// model.
    pub fn fallback_policy(&self) -> Policy {
        let policy = &self.config().policy;
        // Validated at load (and reload) to parse as a policy that needs no model.
        Policy::parse(&policy.fallback, policy.goal).unwrap_or(Policy::Observe)
    }

    /// Whether `observe.command_allow` lets a command metric run `argv`'s program (the
    /// daemon's `PATH` searched, as spawning it would); the error names `container`.
    fn check_command(&self, argv: &[String], container: &str) -> Result<(), DaemonError> {
        let Some(program) = argv.first() else {
            return Ok(());
        };
        placed_host::observe::check_allowed(
            program,
            &self.config().observe.command_allow,
            std::env::var_os("PATH").as_deref(),
        )
        .map_err(|e| DaemonError::MetricSource {
            container: container.to_owned(),
            source: Box::new(e.into()),
        })
    }

    /// Whether and as whom metric commands run.
    pub fn commands(&self) -> placed_host::observe::Commands {
        self.command_user.map_or(
            placed_host::observe::Commands::Refused,
            placed_host::observe::Commands::As,
        )
    }

    /// What sources built for API callers may do: run commands as [`Shared::commands`]
    /// says, read the files `observe.pattern_files` lists.
    pub fn access(&self) -> placed_host::observe::Access {
        placed_host::observe::Access {
            commands: self.commands(),
            files: self.config().observe.pattern_files.clone(),
        }
    }

    /// The operator's rules for a metric source, for Manage and before each measurement
    /// alike (a record kept in the state file from before a rule is held to it too): a
    /// command, or a pattern metric's program, only where command metrics are allowed and
    /// `observe.command_allow` holds its program; a pattern metric's file only under
    /// `observe.pattern_files` (checked again on the file when it is opened).
    pub fn check_metric(&self, spec: &SourceSpec, container: &str) -> Result<(), DaemonError> {
        let argv = match spec {
            SourceSpec::Command { argv, .. }
            | SourceSpec::Pattern {
                input: PatternInput::Program { argv, .. },
                ..
            } => argv,
            SourceSpec::Pattern {
                input: PatternInput::File { path },
                ..
            } => {
                return placed_host::observe::pattern::check_path(
                    path,
                    &self.config().observe.pattern_files,
                )
                .map_err(|e| DaemonError::MetricSource {
                    container: container.to_owned(),
                    source: Box::new(PatternError::from(e).into()),
                });
            }
            SourceSpec::Pushed { .. } | SourceSpec::Prometheus { .. } | SourceSpec::Perf { .. } => {
                return Ok(());
            }
        };
        if !self.config().observe.allow_command_metrics {
            return Err(DaemonError::CommandMetricsOff);
        }
        self.check_command(argv, container)
    }

    /// The configuration now in force.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The measurement protocol now in force.
    pub fn protocol(&self) -> Arc<Protocol> {
        self.protocol
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the configuration and the protocol derived from it. A measurement already
    /// running keeps the protocol it started with.
    pub fn reconfigure(&self, config: Config) -> Result<(), StartError> {
        let protocol = config.protocol().map_err(StartError::Protocol)?;
        *self.protocol.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(protocol);
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
        Ok(())
    }

    /// A migration mode with the configured defaults (the throttled mode's cap).
    pub fn mode_of(&self, kind: ModeKind) -> Mode {
        kind.mode(
            self.config()
                .policy
                .throttle_mib_per_s
                .saturating_mul(1 << 20),
        )
    }

    /// The configured migration mode.
    pub fn migration_mode(&self) -> Mode {
        self.mode_of(self.config().policy.migration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_user_needs_both_capabilities() {
        assert!(can_switch_user(|_| true));
        assert!(!can_switch_user(|c| c != CAP_SETUID));
        assert!(!can_switch_user(|c| c != CAP_SETGID));
        // This process: as the test runs (root or not, no unit around it), both are in
        // its bounding set.
        assert!(can_switch_user(bounding_set_has));
    }
}
