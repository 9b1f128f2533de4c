//! Reloading the configuration (SIGHUP, `systemctl reload placed`): which settings may
//! change while the daemon runs, and what a new file changes.
//!
//! Settings that only steer future decisions change live: the `[policy]` and `[observe]`
//! sections (new containers get the new default policy; every task uses the new values from
//! its next step; a measurement already running finishes on the protocol it began with),
//! the resync interval, the log level, the metrics endpoint and `[production_data]` (read at
//! each append). Everything else (sockets,
//! TLS, the state file, model directory, log format, machine description, which runtimes
//! and cgroups are managed) is bound into listeners and tasks at start: a change there is
//! refused, the running value kept, and a warning names the keys until the daemon is
//! restarted. A key this list does not know needs a restart, so a new setting is never
//! applied half-way by accident.

use crate::config::Config;

/// Settings (a section, or one dotted key) that may change while running.
pub const LIVE: &[&str] = &[
    "policy",
    "observe",
    "metrics",
    "production_data",
    "daemon.log_level",
    "containers.resync_interval",
];

/// Keys inside a live section that still need a restart: who may run programs on this
/// host, and as whom, is resolved once at start (the user must exist and not be root), and a
/// reload must not widen it, nor the files the daemon reads for API callers.
pub const BOUND_AT_START: &[&str] = &[
    "observe.allow_command_metrics",
    "observe.command_user",
    "observe.command_allow",
    "observe.pattern_files",
];

/// Whether the dotted `key` may change while running.
pub fn is_live(key: &str) -> bool {
    if BOUND_AT_START.contains(&key) {
        return false;
    }
    LIVE.iter().any(|live| {
        key == *live
            || key
                .strip_prefix(live)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// What a new configuration file changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The configuration to run on: the running one with the live settings of the new file.
    pub config: Config,
    /// Dotted keys that change now.
    pub applied: Vec<String>,
    /// Dotted keys that changed in the file but keep their running value until a restart.
    pub refused: Vec<String>,
}

/// The configuration could not be compared (it cannot be written as TOML).
#[derive(Debug, thiserror::Error)]
#[error("cannot compare the configurations: {0}")]
pub struct CompareError(String);

/// Splits what `new` changes from `running` into what applies now and what waits.
pub fn plan(running: &Config, new: Config) -> Result<Plan, CompareError> {
    let (applied, refused): (Vec<String>, Vec<String>) = changed_keys(running, &new)?
        .into_iter()
        .partition(|k| is_live(k));
    let mut config = running.clone();
    config.policy = new.policy;
    config.observe = observe_live(&running.observe, new.observe);
    config.metrics = new.metrics;
    config.production_data = new.production_data;
    config.daemon.log_level = new.daemon.log_level;
    config.containers.resync_interval = new.containers.resync_interval;
    Ok(Plan {
        config,
        applied,
        refused,
    })
}

/// The new `[observe]` section, but for what is bound at start.
fn observe_live(
    running: &crate::config::ObserveConfig,
    mut new: crate::config::ObserveConfig,
) -> crate::config::ObserveConfig {
    new.allow_command_metrics = running.allow_command_metrics;
    new.command_user = running.command_user.clone();
    new.command_allow = running.command_allow.clone();
    new.pattern_files = running.pattern_files.clone();
    new
}

/// The dotted keys whose values differ between `a` and `b` (a key set in only one counts).
pub fn changed_keys(a: &Config, b: &Config) -> Result<Vec<String>, CompareError> {
    let to_value = |c: &Config| toml::Value::try_from(c).map_err(|e| CompareError(e.to_string()));
    let mut out = Vec::new();
    diff("", &to_value(a)?, &to_value(b)?, &mut out);
    Ok(out)
}

fn diff(prefix: &str, a: &toml::Value, b: &toml::Value, out: &mut Vec<String>) {
    match (a, b) {
        (toml::Value::Table(ta), toml::Value::Table(tb)) => {
            let mut keys: Vec<&String> = ta.keys().chain(tb.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match (ta.get(k), tb.get(k)) {
                    (Some(va), Some(vb)) => diff(&key, va, vb, out),
                    _ => out.push(key),
                }
            }
        }
        _ if a != b => out.push(prefix.to_owned()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Config {
        Config::parse(Path::new("p.toml"), text).unwrap()
    }

    #[test]
    fn live_keys_apply_and_the_others_wait_for_a_restart() {
        let running = parse("[policy]\ndefault = \"observe\"\n[grpc]\nsocket = \"/a.sock\"");
        let new = parse(
            "[policy]\ndefault = \"conservative\"\n[grpc]\nsocket = \"/b.sock\"\n\
             [daemon]\nlog_level = \"debug\"\nstate_file = \"/s.json\"\n\
             [observe]\nwatch_interval = \"5s\"\n[metrics]\nlisten = \"127.0.0.1:9999\"\n\
             [containers]\nresync_interval = \"3s\"\nruntimes = []",
        );
        let p = plan(&running, new.clone()).unwrap();
        assert_eq!(
            p.applied,
            [
                "containers.resync_interval",
                "daemon.log_level",
                "metrics.listen",
                "observe.watch_interval",
                "policy.default"
            ]
        );
        assert_eq!(
            p.refused,
            ["containers.runtimes", "daemon.state_file", "grpc.socket"]
        );
        assert_eq!(p.config.policy.default, "conservative");
        assert_eq!(p.config.grpc.socket, Path::new("/a.sock"));
        // What the daemon runs on differs from the file in exactly the refused keys.
        assert_eq!(changed_keys(&p.config, &new).unwrap(), p.refused);
    }

    #[test]
    fn a_key_set_in_one_file_only_counts_as_changed() {
        let running = parse("");
        let new = parse("[observe]\nmax_foreign_load = 0.5\n[machine]\ntopology = \"/t.xml\"");
        let p = plan(&running, new).unwrap();
        assert_eq!(p.applied, ["observe.max_foreign_load"]);
        assert_eq!(p.refused, ["machine.topology"]);
    }

    #[test]
    fn who_may_run_commands_waits_for_a_restart() {
        let running = parse("");
        let new = parse(
            "[observe]\nallow_command_metrics = true\ncommand_user = \"daemon\"\nwatch_interval = \"5s\"\ncommand_allow = [\"/\"]\npattern_files = [\"/var/log\"]",
        );
        let p = plan(&running, new).unwrap();
        assert_eq!(p.applied, ["observe.watch_interval"]);
        assert_eq!(
            p.refused,
            [
                "observe.allow_command_metrics",
                "observe.command_allow",
                "observe.command_user",
                "observe.pattern_files"
            ]
        );
        assert!(!p.config.observe.allow_command_metrics);
        assert_eq!(p.config.observe.command_user, "nobody");
        assert!(p.config.observe.command_allow.is_empty());
        assert!(p.config.observe.pattern_files.is_empty());
    }

    #[test]
    fn the_same_file_changes_nothing() {
        let c = parse("[policy]\ngoal = 0.8");
        let p = plan(&c, c.clone()).unwrap();
        assert!(p.applied.is_empty() && p.refused.is_empty(), "{p:?}");
        assert_eq!(p.config, c);
    }

    #[test]
    fn sections_and_keys_match_whole_names_only() {
        assert!(is_live("policy.goal"));
        assert!(!is_live("observe.allow_command_metrics"));
        assert!(!is_live("observe.command_user"));
        assert!(is_live("daemon.log_level"));
        assert!(!is_live("daemon.log_format"));
        assert!(!is_live("policy_extra.x"));
        assert!(!is_live("metricsx"));
    }
}
