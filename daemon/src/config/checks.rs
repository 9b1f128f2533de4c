//! What each section of the configuration refuses, in a line naming the key: one check per
//! section, so that a new key's rule sits beside its section's others.

use std::time::Duration;

use placed_core::policy::Policy;

use super::{
    Config, ContainersConfig, GrpcConfig, MAX_LISTENER_LIMIT, MAX_SOURCE_WAIT, MIN_RESYNC,
    ObserveConfig, PolicyConfig, echo,
};

/// The first problem found, section by section.
pub(super) fn problem(config: &Config) -> Option<String> {
    containers(&config.containers)
        .or_else(|| config.nri.problem())
        .or_else(|| policy(&config.policy))
        .or_else(|| {
            crate::telemetry::logging::parse_level(&config.daemon.log_level)
                .err()
                .map(|e| e.to_string())
        })
        .or_else(|| grpc(&config.grpc))
        .or_else(|| observe(&config.observe))
        .or_else(|| config.protocol().err().map(|e| format!("[observe]: {e}")))
        .or_else(|| config.production_data.problem())
}

/// `containers.cgroups`: each an absolute, normalised path below the root. `""` or `"/"`
/// made every top-level cgroup (other tenants' included) managed, and `..` pointed
/// outside the hierarchy.
fn containers(c: &ContainersConfig) -> Option<String> {
    for path in &c.cgroups {
        let problem = if path.is_empty() || path == "/" {
            Some("names the root, which would manage every top-level cgroup")
        } else if !path.starts_with('/') {
            Some("must be absolute (start with /)")
        } else if path.ends_with('/') || path.contains("//") {
            Some("must be normalised (no repeated or trailing /)")
        } else if path.split('/').any(|p| p == "." || p == "..") {
            Some("must not contain . or ..")
        } else {
            placed_host::cgroup::CgroupPath::parse(path)
                .err()
                .map(|e| e.why)
        };
        if let Some(p) = problem {
            return Some(format!("containers.cgroups entry {:?} {p}", echo(path)));
        }
    }
    (c.resync_interval < MIN_RESYNC).then(|| {
        format!(
            "containers.resync_interval = {:?} is below the minimum of {MIN_RESYNC:?}: the cgroup tree would be listed in a busy loop",
            c.resync_interval
        )
    })
}

fn policy(p: &PolicyConfig) -> Option<String> {
    if !(p.goal > 0.0 && p.goal <= 2.0) {
        return Some(format!("policy.goal = {} is outside (0, 2]", p.goal));
    }
    if !(p.drift.is_finite() && p.drift > 0.0) {
        return Some(format!(
            "policy.drift = {} must be a number above 0: how far (relative, 0.15 = 15%) a watched container may stray from its prediction before it is evaluated again",
            p.drift
        ));
    }
    if p.throttle_mib_per_s == 0 {
        return Some(
            "policy.throttle_mib_per_s = 0 would never move any memory: give a cap of at least 1 MiB/s"
                .into(),
        );
    }
    if let Err(e) = placed_core::policy::Policy::parse(&p.default, p.goal) {
        return Some(format!(
            "policy.default: {}",
            echo(&placed_core::text::error_line(&e))
        ));
    }
    match placed_core::policy::Policy::parse(&p.fallback, p.goal) {
        Ok(
            Policy::Observe | Policy::Conservative | Policy::SmartAggressive | Policy::Aggressive,
        ) => {}
        Ok(_) => {
            return Some(format!(
                "policy.fallback = {:?} needs a model or a placement: the fallback for a stopped model is observe, conservative, smart-aggressive or aggressive",
                echo(&p.fallback)
            ));
        }
        Err(e) => {
            return Some(format!(
                "policy.fallback: {}",
                echo(&placed_core::text::error_line(&e))
            ));
        }
    }
    if p.reassert_limit == 0 {
        return Some(
            "policy.reassert_limit = 0 would never write a placement back: set on_override = \"leave\" for that, or allow at least 1"
                .into(),
        );
    }
    if p.reassert_window.is_zero() {
        return Some(
            "policy.reassert_window = 0 s would never count a write-back against the limit: give the window the limit applies in"
                .into(),
        );
    }
    (p.drift_windows == 0).then(|| {
        "policy.drift_windows = 0: at least one watch measurement must miss the prediction".into()
    })
}

fn grpc(g: &GrpcConfig) -> Option<String> {
    match u32::from_str_radix(&g.socket_mode, 8) {
        Err(_) => {
            return Some(format!(
                "grpc.socket_mode = {:?} is not an octal mode like \"0660\"",
                echo(&g.socket_mode)
            ));
        }
        // Others writing means anyone on the host drives placed (moves containers);
        // setuid, setgid and sticky bits mean nothing on a socket and hide a typo.
        Ok(m) if m & !0o777 != 0 || m & 0o002 != 0 => {
            return Some(format!(
                "grpc.socket_mode = {:?} lets every local user drive placed, or sets special bits: use at most 0775 (0660 with grpc.socket_group is the usual choice)",
                echo(&g.socket_mode)
            ));
        }
        Ok(_) => {}
    }
    if !(1..=1 << 20).contains(&g.watch_history) {
        return Some(format!(
            "grpc.watch_history = {} is outside 1 to 1048576 events",
            g.watch_history
        ));
    }
    for (key, value, what) in [
        ("grpc.max_watchers", g.max_watchers, "streams"),
        (
            "grpc.max_unix_connections",
            g.max_unix_connections,
            "connections",
        ),
        (
            "grpc.max_connections_per_peer",
            g.max_connections_per_peer,
            "connections",
        ),
    ] {
        if !(1..=MAX_LISTENER_LIMIT).contains(&value) {
            return Some(format!(
                "{key} = {value} is outside 1 to {MAX_LISTENER_LIMIT} {what}"
            ));
        }
    }
    if !(Duration::from_millis(100)..=Duration::from_secs(60)).contains(&g.handshake_timeout) {
        return Some(format!(
            "grpc.handshake_timeout = {:?} is outside 100ms to 60s",
            g.handshake_timeout
        ));
    }
    (g.tcp.is_some() && g.tls.is_none()).then(|| {
        "grpc.tcp needs grpc.tls: placed does not serve its API unencrypted over TCP".into()
    })
}

fn observe(o: &ObserveConfig) -> Option<String> {
    if let Some(relative) = o.command_allow.iter().find(|p| !p.is_absolute()) {
        return Some(format!(
            "observe.command_allow entry {:?} is not an absolute path: name the program or directory from /",
            placed_core::text::clip(&relative.display().to_string(), 200)
        ));
    }
    if let Some(bad) = o.pattern_files.iter().find(|p| {
        !p.is_absolute()
            || p.components().any(|c| c == std::path::Component::ParentDir)
            || ["/proc", "/sys", "/dev"].iter().any(|k| p.starts_with(k))
            || p.as_os_str() == "/"
    }) {
        return Some(format!(
            "observe.pattern_files entry {:?} is not an absolute path without `..` outside /, /proc, /sys and /dev: name the log files or their directories",
            placed_core::text::clip(&bad.display().to_string(), 200)
        ));
    }
    if o.command_user.is_empty() {
        return Some(
            "observe.command_user is empty: name the unprivileged user command metrics run as"
                .into(),
        );
    }
    for (key, value) in [
        ("observe.max_foreign_load", o.max_foreign_load),
        ("observe.max_steal", o.max_steal),
    ] {
        if let Some(f) = value.filter(|f| !(0.0..=1.0).contains(f)) {
            return Some(format!("{key} = {f} is outside [0, 1]"));
        }
    }
    for (name, d) in [
        ("scrape_timeout", o.scrape_timeout),
        ("command_timeout", o.command_timeout),
    ] {
        if d.is_zero() || d > MAX_SOURCE_WAIT {
            return Some(format!(
                "observe.{name} = {d:?} is outside (0 s, {MAX_SOURCE_WAIT:?}]"
            ));
        }
    }
    (o.scrape_interval > MAX_SOURCE_WAIT).then(|| {
        format!(
            "observe.scrape_interval = {:?} is above {MAX_SOURCE_WAIT:?}: a measurement takes that times the windows",
            o.scrape_interval
        )
    })
}
