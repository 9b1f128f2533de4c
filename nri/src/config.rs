//! How the plugin connects and answers: the daemon's `[nri]` settings, checked.

use std::path::PathBuf;
use std::time::Duration;

use placed_core::fault::Fault;

use crate::events::{EmptyMask, EventMask};

/// What the runtime waits for any answer of a plugin before it drops the plugin (NRI's
/// default request timeout, containerd's and CRI-O's).
pub const RUNTIME_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The runtime's NRI socket.
    pub socket: PathBuf,
    /// The name placed registers as.
    pub name: String,
    /// Two digits: the runtime calls plugins in ascending order of it.
    pub index: String,
    /// How long an answer may take: past it the runtime gets "no change" and placed's
    /// answer follows as an update (see [`crate::Placer`]). Under [`RUNTIME_TIMEOUT`],
    /// with room for the runtime's own work and the round trip.
    pub budget: Duration,
    /// The events placed subscribes to.
    pub events: EventMask,
    /// How long registration may take before the attempt counts as failed.
    pub register_timeout: Duration,
    /// How long an UpdateContainers call may take (the runtime rewrites cgroups then).
    pub update_timeout: Duration,
    /// The first pause before connecting again; it doubles up to `backoff_max`, and is
    /// back to this after a connection that was synchronized.
    pub backoff: Duration,
    pub backoff_max: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            // Where containerd and CRI-O put it by default.
            socket: PathBuf::from("/var/run/nri/nri.sock"),
            name: "placed".into(),
            index: "50".into(),
            budget: Duration::from_millis(500),
            events: EventMask::PLACED,
            register_timeout: Duration::from_secs(5),
            update_timeout: Duration::from_secs(5),
            backoff: Duration::from_millis(250),
            backoff_max: Duration::from_secs(10),
        }
    }
}

/// A setting the plugin cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("nri.name is empty: the runtime refuses a plugin without a name")]
    NoName,
    #[error("nri.index {0:?} is not two digits (00 to 99)")]
    Index(String),
    #[error(
        "nri.budget {budget:?} is not under the runtime's {RUNTIME_TIMEOUT:?} timeout: a late answer would make the runtime drop placed"
    )]
    Budget { budget: Duration },
    #[error("nri.events")]
    Events(#[source] EmptyMask),
    #[error("nri.backoff {backoff:?} must be above zero and at most nri.backoff_max {max:?}")]
    Backoff { backoff: Duration, max: Duration },
}

impl ConfigError {
    pub fn fault(&self) -> Fault {
        Fault::InvalidInput
    }
}

impl Config {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(ConfigError::NoName);
        }
        if self.index.len() != 2 || !self.index.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ConfigError::Index(placed_core::text::clip(&self.index, 20)));
        }
        if self.budget.is_zero() || self.budget >= RUNTIME_TIMEOUT {
            return Err(ConfigError::Budget {
                budget: self.budget,
            });
        }
        self.events.wire().map_err(ConfigError::Events)?;
        if self.backoff.is_zero() || self.backoff > self.backoff_max {
            return Err(ConfigError::Backoff {
                backoff: self.backoff,
                max: self.backoff_max,
            });
        }
        Ok(())
    }
}

/// The pause before the `failures`-th attempt in a row to connect (1 for the first retry).
pub(crate) fn backoff(config: &Config, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    config
        .backoff
        .saturating_mul(1 << doublings)
        .min(config.backoff_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
    }

    #[test]
    fn bad_settings_are_named() {
        let c = |f: fn(&mut Config)| {
            let mut c = Config::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert_eq!(c(|c| c.name = " ".into()), ConfigError::NoName);
        assert_eq!(c(|c| c.index = "5".into()), ConfigError::Index("5".into()));
        assert_eq!(
            c(|c| c.index = "5a".into()),
            ConfigError::Index("5a".into())
        );
        assert!(matches!(
            c(|c| c.budget = RUNTIME_TIMEOUT),
            ConfigError::Budget { .. }
        ));
        assert!(matches!(
            c(|c| c.budget = Duration::ZERO),
            ConfigError::Budget { .. }
        ));
        assert!(matches!(
            c(|c| c.events = EventMask::EMPTY),
            ConfigError::Events(_)
        ));
        assert!(matches!(
            c(|c| c.backoff = Duration::from_secs(60)),
            ConfigError::Backoff { .. }
        ));
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let c = Config::default();
        let pauses: Vec<_> = (1..=8).map(|n| backoff(&c, n).as_millis()).collect();
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000, 8000, 10000, 10000]);
        assert_eq!(backoff(&c, u32::MAX), c.backoff_max);
        assert_eq!(backoff(&c, 0), c.backoff);
    }
}
